//! The subset of `onnx.proto` (IR version 8) the graph builder writes, encoded by
//! hand: protobuf's wire format is varints and length-delimited fields, and
//! nothing here needs decoding. Field numbers follow onnx/onnx.proto3:
//!
//! | message            | fields used                                                |
//! |--------------------|------------------------------------------------------------|
//! | ModelProto         | 1 ir_version, 2 producer_name, 3 producer_version, 7 graph, 8 opset_import |
//! | OperatorSetIdProto | 1 domain, 2 version                                        |
//! | GraphProto         | 1 node, 2 name, 5 initializer, 11 input, 12 output         |
//! | NodeProto          | 1 input, 2 output, 3 name, 4 op_type, 5 attribute, 7 domain |
//! | AttributeProto     | 1 name, 2 f, 3 i, 8 ints, 20 type                          |
//! | TensorProto        | 1 dims, 2 data_type, 8 name, 9 raw_data                    |
//! | ValueInfoProto     | 1 name, 2 type                                             |
//! | TypeProto          | 1 tensor_type (TypeProto.Tensor: 1 elem_type, 2 shape)     |
//! | TensorShapeProto   | 1 dim (Dimension: 1 dim_value, 2 dim_param)                |
//!
//! Encoding is deterministic: fields in number order, repeated fields in the
//! order given; an empty node domain (the default ONNX domain) is not written.

/// `TensorProto.DataType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataType {
    Float = 1,
    Uint8 = 2,
    Int8 = 3,
    Int32 = 6,
    Int64 = 7,
}

/// `AttributeProto.AttributeType`.
#[derive(Debug, Clone)]
pub enum Attr {
    Float(f32),
    Int(i64),
    Ints(Vec<i64>),
}

#[derive(Debug, Clone)]
pub struct Node {
    /// Operator set domain: `""` for standard ONNX, e.g. `com.microsoft`.
    pub domain: &'static str,
    pub op_type: &'static str,
    pub name: String,
    pub inputs: Vec<String>,
    pub outputs: Vec<String>,
    pub attributes: Vec<(&'static str, Attr)>,
}

#[derive(Debug, Clone)]
pub struct Tensor {
    pub name: String,
    pub dims: Vec<i64>,
    pub data_type: DataType,
    /// Little-endian element bytes.
    pub raw: Vec<u8>,
}

/// A graph input or output: element type and dims (a name is symbolic).
#[derive(Debug, Clone)]
pub struct ValueInfo {
    pub name: String,
    pub elem_type: DataType,
    pub dims: Vec<Dim>,
}

#[derive(Debug, Clone)]
pub enum Dim {
    Value(i64),
    Param(&'static str),
}

#[derive(Debug, Clone)]
pub struct Graph {
    pub name: String,
    pub nodes: Vec<Node>,
    pub initializers: Vec<Tensor>,
    pub inputs: Vec<ValueInfo>,
    pub outputs: Vec<ValueInfo>,
}

#[derive(Debug, Clone)]
pub struct Model {
    pub ir_version: i64,
    pub producer_name: String,
    pub producer_version: String,
    /// `(domain, version)` of every operator set used, the default domain first.
    pub opset_imports: Vec<(&'static str, i64)>,
    pub graph: Graph,
}

const VARINT: u32 = 0;
const FIXED32: u32 = 5;
const LEN: u32 = 2;

struct Buf(Vec<u8>);

impl Buf {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }
    fn key(&mut self, field: u32, wire: u32) {
        self.varint(u64::from(field << 3 | wire));
    }
    fn int(&mut self, field: u32, v: i64) {
        self.key(field, VARINT);
        self.varint(v as u64);
    }
    fn bytes(&mut self, field: u32, b: &[u8]) {
        self.key(field, LEN);
        self.varint(b.len() as u64);
        self.0.extend_from_slice(b);
    }
    fn string(&mut self, field: u32, s: &str) {
        self.bytes(field, s.as_bytes());
    }
    fn float(&mut self, field: u32, f: f32) {
        self.key(field, FIXED32);
        self.0.extend_from_slice(&f.to_le_bytes());
    }
    fn message(&mut self, field: u32, encode: impl FnOnce(&mut Buf)) {
        let mut inner = Buf(Vec::new());
        encode(&mut inner);
        self.bytes(field, &inner.0);
    }
}

fn encode_attr(b: &mut Buf, name: &str, attr: &Attr) {
    b.string(1, name);
    match attr {
        Attr::Float(f) => {
            b.float(2, *f);
            b.int(20, 1);
        }
        Attr::Int(i) => {
            b.int(3, *i);
            b.int(20, 2);
        }
        Attr::Ints(v) => {
            for i in v {
                b.int(8, *i);
            }
            b.int(20, 7);
        }
    }
}

fn encode_node(b: &mut Buf, n: &Node) {
    for i in &n.inputs {
        b.string(1, i);
    }
    for o in &n.outputs {
        b.string(2, o);
    }
    b.string(3, &n.name);
    b.string(4, n.op_type);
    for (name, a) in &n.attributes {
        b.message(5, |m| encode_attr(m, name, a));
    }
    if !n.domain.is_empty() {
        b.string(7, n.domain);
    }
}

fn encode_tensor(b: &mut Buf, t: &Tensor) {
    for d in &t.dims {
        b.int(1, *d);
    }
    b.int(2, t.data_type as i64);
    b.string(8, &t.name);
    b.bytes(9, &t.raw);
}

fn encode_value_info(b: &mut Buf, v: &ValueInfo) {
    b.string(1, &v.name);
    b.message(2, |ty| {
        ty.message(1, |tensor| {
            tensor.int(1, v.elem_type as i64);
            tensor.message(2, |shape| {
                for d in &v.dims {
                    shape.message(1, |dim| match d {
                        Dim::Value(x) => dim.int(1, *x),
                        Dim::Param(p) => dim.string(2, p),
                    });
                }
            });
        });
    });
}

impl Model {
    /// The serialized `ModelProto`.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Buf(Vec::new());
        b.int(1, self.ir_version);
        b.string(2, &self.producer_name);
        b.string(3, &self.producer_version);
        b.message(7, |g| {
            let graph = &self.graph;
            for n in &graph.nodes {
                g.message(1, |m| encode_node(m, n));
            }
            g.string(2, &graph.name);
            for t in &graph.initializers {
                g.message(5, |m| encode_tensor(m, t));
            }
            for v in &graph.inputs {
                g.message(11, |m| encode_value_info(m, v));
            }
            for v in &graph.outputs {
                g.message(12, |m| encode_value_info(m, v));
            }
        });
        for (domain, version) in &self.opset_imports {
            b.message(8, |o| {
                o.string(1, domain);
                o.int(2, *version);
            });
        }
        b.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_and_keys_follow_the_wire_format() {
        let mut b = Buf(Vec::new());
        b.int(1, 300);
        assert_eq!(b.0, [0x08, 0xAC, 0x02]);
        let mut b = Buf(Vec::new());
        b.int(3, -1);
        assert_eq!(b.0.len(), 11, "negative int64 is a 10-byte varint");
        let mut b = Buf(Vec::new());
        b.string(2, "hi");
        assert_eq!(b.0, [0x12, 2, b'h', b'i']);
        let mut b = Buf(Vec::new());
        b.float(2, 1.0);
        assert_eq!(b.0, [0x15, 0, 0, 0x80, 0x3F]);
    }
}
