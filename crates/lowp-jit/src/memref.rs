//! Strided memref descriptors for calling JIT-compiled functions through their C interface
//! (`_mlir_ciface_<name>`, which takes a pointer to each memref's descriptor).

use std::marker::PhantomData;

/// An argument of a JIT call: a row-major buffer seen as a memref, or a scalar.
///
/// The descriptor layout is MLIR's `{ T* allocated, T* aligned, i64 offset, i64 sizes[R],
/// i64 strides[R] }`, kept as words (pointers are 64-bit on the supported hosts).
pub struct MemRefArg<'a> {
    words: Vec<u64>,
    _buffer: PhantomData<&'a mut [u8]>,
}

impl<'a> MemRefArg<'a> {
    /// A contiguous row-major memref over `data` with `shape` (elements of `T`).
    ///
    /// # Panics
    /// If `data` is shorter than the shape's element count.
    pub fn new<T>(data: &'a mut [T], shape: &[usize]) -> Self {
        let count: usize = shape.iter().product();
        assert!(
            data.len() >= count,
            "buffer of {} elements for shape {shape:?}",
            data.len()
        );
        let ptr = data.as_mut_ptr() as u64;
        let mut words = vec![ptr, ptr, 0];
        words.extend(shape.iter().map(|&d| d as u64));
        let mut stride = 1u64;
        let mut strides = vec![0u64; shape.len()];
        for (i, &d) in shape.iter().enumerate().rev() {
            strides[i] = stride;
            stride *= d as u64;
        }
        words.extend(strides);
        Self {
            words,
            _buffer: PhantomData,
        }
    }

    /// A contiguous row-major memref over raw bytes holding elements of `element_bytes`
    /// each.
    ///
    /// # Panics
    /// If `data` is shorter than the shape needs.
    pub fn new_bytes(data: &'a mut [u8], shape: &[usize], element_bytes: usize) -> Self {
        let count: usize = shape.iter().product();
        assert!(
            data.len() >= count * element_bytes,
            "buffer of {} bytes for shape {shape:?}",
            data.len()
        );
        let ptr = data.as_mut_ptr() as u64;
        let mut words = vec![ptr, ptr, 0];
        words.extend(shape.iter().map(|&d| d as u64));
        let mut stride = 1u64;
        let mut strides = vec![0u64; shape.len()];
        for (i, &d) in shape.iter().enumerate().rev() {
            strides[i] = stride;
            stride *= d as u64;
        }
        words.extend(strides);
        Self {
            words,
            _buffer: PhantomData,
        }
    }

    /// A rank-0 memref over raw bytes.
    pub fn scalar_bytes(data: &'a mut [u8]) -> Self {
        let ptr = data.as_mut_ptr() as u64;
        Self {
            words: vec![ptr, ptr, 0],
            _buffer: PhantomData,
        }
    }

    /// A rank-0 memref over one value.
    pub fn scalar<T>(value: &'a mut T) -> Self {
        let ptr = value as *mut T as u64;
        Self {
            words: vec![ptr, ptr, 0],
            _buffer: PhantomData,
        }
    }

    pub(crate) fn descriptor_ptr(&mut self) -> *mut u64 {
        self.words.as_mut_ptr()
    }
}

/// Whether memref type `t` is laid out as [`MemRefArg::new`] describes a buffer: dense
/// row-major, offset 0, in the default memory space. Anything else would be read and
/// written past (or before) the buffer allocated for its shape; `Err` says how it differs.
pub(crate) fn dense_row_major(t: melior::ir::Type) -> Result<(), String> {
    use melior::ir::TypeLike;
    let raw = t.to_raw();
    // SAFETY: queries on a live memref type; `strides` has one slot per dimension.
    unsafe {
        if !mlir_sys::mlirTypeIsAMemRef(raw) {
            return Err(format!("{t} is not a memref"));
        }
        if !mlir_sys::mlirMemRefTypeGetMemorySpace(raw).ptr.is_null() {
            return Err(format!(
                "{t} is in a memory space other than the default; lowp-run allocates host memory"
            ));
        }
        let rank = mlir_sys::mlirShapedTypeGetRank(raw) as usize;
        let shape: Vec<i64> = (0..rank)
            .map(|d| mlir_sys::mlirShapedTypeGetDimSize(raw, d as isize))
            .collect();
        // Nothing is addressed in a memref with no elements (MLIR gives its strides as '?').
        if shape.contains(&0) {
            return Ok(());
        }
        let mut strides = vec![0i64; rank];
        let mut offset = 0i64;
        let strided =
            mlir_sys::mlirMemRefTypeGetStridesAndOffset(raw, strides.as_mut_ptr(), &mut offset);
        if strided.value == 0 {
            return Err(format!(
                "{t} has a layout that is not strided; lowp-run allocates dense row-major memrefs"
            ));
        }
        let mut dense = vec![1i64; rank];
        for d in (0..rank.saturating_sub(1)).rev() {
            dense[d] = dense[d + 1].saturating_mul(shape[d + 1]);
        }
        // A dimension of one element has no step to check.
        let same = (0..rank).all(|d| shape[d] == 1 || strides[d] == dense[d]);
        if offset != 0 || !same {
            let show = |v: &[i64]| {
                v.iter()
                    .map(|&s| {
                        if s == i64::MIN {
                            "?".to_string()
                        } else {
                            s.to_string()
                        }
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let offset = if offset == i64::MIN {
                "?".to_string()
            } else {
                offset.to_string()
            };
            return Err(format!(
                "{t} is not dense row-major (offset {offset}, strides [{}]; lowp-run allocates \
                 each argument densely: offset 0, strides [{}])",
                show(&strides),
                show(&dense)
            ));
        }
    }
    Ok(())
}
