use std::iter::FusedIterator;

use crate::common::types::PointOffsetType;

use crate::posting_list::value_handler::{PostingValue, ValueHandler};
use crate::posting_list::visitor::PostingVisitor;
use crate::posting_list::{CHUNK_LEN, PostingElement, PostingLen};

pub struct PostingIterator<'a, V: PostingValue> {
    visitor: PostingVisitor<'a, V>,
    current_elem: Option<PostingElement<V>>,
    offset: usize,
}

impl<'a, V: PostingValue> PostingIterator<'a, V> {
    pub fn new(visitor: PostingVisitor<'a, V>) -> Self {
        Self {
            visitor,
            current_elem: None,
            offset: 0,
        }
    }

    /// Advances the iterator until the current element id is greater than or equal to the given id.
    ///
    /// Returns `Some(PostingElement)` on the first element that is greater than or equal to the given id. It can be possible that this id is
    /// the head of the iterator, so it does not need to be advanced.
    ///
    /// `None` means the iterator is exhausted.
    ///
    /// The seek leaves the iterator *on* the element it returns, not past it: a following
    /// [`Iterator::next`] yields that same element again. Callers mixing the two on one iterator
    /// have to skip it themselves.
    pub fn advance_until_greater_or_equal(
        &mut self,
        target_id: PointOffsetType,
    ) -> Option<PostingElement<V>> {
        if let Some(current) = &self.current_elem
            && current.id >= target_id
        {
            return Some(current.clone());
        }

        if self.offset >= self.visitor.len() {
            return None;
        }

        let Some(offset) = self
            .visitor
            .search_greater_or_equal(target_id, Some(self.offset))
        else {
            self.current_elem = None;
            self.offset = self.visitor.len();
            return None;
        };

        debug_assert!(offset >= self.offset);
        let greater_or_equal = self.visitor.get_by_offset(offset);

        self.current_elem = greater_or_equal.clone();
        self.offset = offset;

        greater_or_equal
    }
}

impl<V: PostingValue> Iterator for PostingIterator<'_, V> {
    type Item = PostingElement<V>;

    fn next(&mut self) -> Option<Self::Item> {
        let next_opt = self.visitor.get_by_offset(self.offset).inspect(|_| {
            self.offset += 1;
        });

        self.current_elem = next_opt.clone();

        next_opt
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let remaining_len = self.len();
        (remaining_len, Some(remaining_len))
    }

    fn count(self) -> usize {
        self.size_hint().0
    }
}

impl<V: PostingValue> ExactSizeIterator for PostingIterator<'_, V> {
    fn len(&self) -> usize {
        self.visitor.list.len().saturating_sub(self.offset)
    }
}

impl<V: PostingValue> FusedIterator for PostingIterator<'_, V> {}

/// Like [`PostingIterator`], but yields each id with the byte length of its
/// value instead of the value itself. Never reads the variable-size data, so on
/// an mmap'd list the value bytes are never faulted in.
///
/// A term frequency stored as a list of positions is one such length: the
/// number of positions is the number of bytes divided by their width, and the
/// positions themselves are not needed to know how many there are.
pub struct PostingLenIterator<'a, V: PostingValue> {
    visitor: PostingVisitor<'a, V>,
    current: Option<PostingLen>,
    /// The offset of `current`, while there is one.
    current_offset: Option<usize>,
    offset: usize,
}

impl<'a, V: PostingValue> PostingLenIterator<'a, V> {
    pub fn new(visitor: PostingVisitor<'a, V>) -> Self {
        Self {
            visitor,
            current: None,
            current_offset: None,
            offset: 0,
        }
    }

    /// Call `f` for every element from the current one, if any, else from the
    /// next, to the end of the list, in order, and leave the iterator
    /// exhausted.
    ///
    /// The same elements a loop of [`Iterator::next`] would yield, a chunk at
    /// a time: each chunk is decompressed once and its lengths read from
    /// neighbouring offsets, with no per-element offset arithmetic.
    pub fn for_each_remaining(&mut self, f: impl FnMut(PostingLen)) {
        self.walk(None, f);
    }

    /// [`Self::for_each_remaining`] up to the first element whose id is at or
    /// past `end`, which becomes the current one. Returns whether there is
    /// such an element: `false` leaves the iterator exhausted.
    pub fn for_each_below(&mut self, end: PointOffsetType, f: impl FnMut(PostingLen)) -> bool {
        self.walk(Some(end), f)
    }

    fn walk(&mut self, end: Option<PointOffsetType>, mut f: impl FnMut(PostingLen)) -> bool {
        let mut offset = self.current_offset.unwrap_or(self.offset);
        let len = self.visitor.len();
        let chunks = self.visitor.list.chunks_len();
        let var_data_len = self.visitor.list.var_size_data.len();
        let mut stop = None;
        while offset < len {
            let chunk_idx = offset / CHUNK_LEN;
            if chunk_idx < chunks {
                let ids = *self.visitor.decompressed_chunk(chunk_idx);
                let list = &self.visitor.list;
                let sized_values = &list.get_chunk_unchecked(chunk_idx).sized_values;
                // The value after the chunk's last: the next chunk's first, or
                // the first remainder's.
                let after = list
                    .get_chunk(chunk_idx + 1)
                    .map(|chunk| chunk.sized_values[0])
                    .or_else(|| list.get_remainder(0).map(|e| e.value));
                // Ids rise within a chunk, so one comparison with its last
                // tells whether `end` falls inside it.
                let from = offset % CHUNK_LEN;
                let upto = match end {
                    Some(end) if ids[CHUNK_LEN - 1] >= end => {
                        from + ids[from..].partition_point(|&id| id < end)
                    }
                    _ => CHUNK_LEN,
                };
                for local in from..upto {
                    let next = sized_values.get(local + 1).copied().or(after);
                    let value_len =
                        V::Handler::value_len(sized_values[local], || next, var_data_len);
                    f(PostingLen {
                        id: ids[local],
                        value_len,
                    });
                }
                if upto < CHUNK_LEN {
                    stop = Some(chunk_idx * CHUNK_LEN + upto);
                    break;
                }
                offset = (chunk_idx + 1) * CHUNK_LEN;
            } else {
                let list = &self.visitor.list;
                for local in offset % CHUNK_LEN..list.remainders_len() {
                    let e = list.get_remainder(local).expect("within the remainders");
                    if end.is_some_and(|end| e.id.get() >= end) {
                        stop = Some(chunks * CHUNK_LEN + local);
                        break;
                    }
                    let next = list.get_remainder(local + 1).map(|r| r.value);
                    let value_len = V::Handler::value_len(e.value, || next, var_data_len);
                    f(PostingLen {
                        id: e.id.get(),
                        value_len,
                    });
                }
                break;
            }
        }
        match stop {
            // As if `next` had just yielded it.
            Some(at) => {
                self.current = self.visitor.value_len_by_offset(at);
                self.current_offset = Some(at);
                self.offset = at + 1;
                true
            }
            None => {
                self.offset = len;
                self.current = None;
                self.current_offset = None;
                false
            }
        }
    }

    /// The element most recently yielded by [`Iterator::next`] or
    /// [`Self::advance_until_greater_or_equal`], if any.
    pub fn current(&self) -> Option<PostingLen> {
        self.current
    }

    /// Index of [`Self::current`] in the posting list, so that data kept
    /// alongside the list in posting order can be looked up for it.
    pub fn current_offset(&self) -> Option<usize> {
        self.current_offset
    }

    /// Advances until the current id is greater than or equal to `target_id`,
    /// with the same contract as [`PostingIterator::advance_until_greater_or_equal`].
    pub fn advance_until_greater_or_equal(
        &mut self,
        target_id: PointOffsetType,
    ) -> Option<PostingLen> {
        if let Some(current) = self.current
            && current.id >= target_id
        {
            return Some(current);
        }

        if self.offset >= self.visitor.len() {
            return None;
        }

        let Some(offset) = self
            .visitor
            .search_greater_or_equal(target_id, Some(self.offset))
        else {
            self.current = None;
            self.current_offset = None;
            self.offset = self.visitor.len();
            return None;
        };

        debug_assert!(offset >= self.offset);
        self.current = self.visitor.value_len_by_offset(offset);
        self.current_offset = self.current.map(|_| offset);
        self.offset = offset;
        self.current
    }
}

impl<V: PostingValue> Iterator for PostingLenIterator<'_, V> {
    type Item = PostingLen;

    fn next(&mut self) -> Option<Self::Item> {
        let at = self.offset;
        let next = self.visitor.value_len_by_offset(at).inspect(|_| {
            self.offset += 1;
        });
        self.current = next;
        self.current_offset = next.map(|_| at);
        next
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let remaining_len = self.len();
        (remaining_len, Some(remaining_len))
    }
}

impl<V: PostingValue> ExactSizeIterator for PostingLenIterator<'_, V> {
    fn len(&self) -> usize {
        self.visitor.list.len().saturating_sub(self.offset)
    }
}

impl<V: PostingValue> FusedIterator for PostingLenIterator<'_, V> {}
