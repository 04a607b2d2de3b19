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
