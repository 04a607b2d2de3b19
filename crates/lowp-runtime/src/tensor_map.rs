//! TMA tensor maps (`CUtensorMap`, tile mode) of row-major matrices, as `lowp-to-nvvm`'s
//! `kernel=wgmma-tma` asks for them (`nvgpu.tma.create.descriptor` on the host): operand
//! codes as bytes, and C (f32, f16, bf16) where its epilogue stores by TMA (`store-c=tma`).
//! What the driver's `cuTensorMapEncodeTiled` takes is worked out and checked here, so that
//! a wrong shape fails with a message before the driver is called, then encoded.
//!
//! The IR writes shapes outermost first (`memref<ROWSxCOLSxT>`, `box[ROWS, COLS]`); the
//! driver takes dimensions innermost first, in elements, and `rank - 1` strides in bytes
//! (the innermost is the element).

use std::ffi::c_void;
use std::mem::MaybeUninit;

use cudarc::driver::sys;

use crate::GpuError;

/// The elements of a tensor map's tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapElement {
    /// Bytes (operand codes, whatever their format).
    U8,
    /// IEEE binary32 (C as f32).
    F32,
    /// IEEE binary16.
    F16,
    /// bfloat16.
    Bf16,
}

impl MapElement {
    /// Every element type, with its name in manifests and IR (`u8`, `f32`, `f16`, `bf16`).
    pub const ALL: [(MapElement, &'static str); 4] = [
        (MapElement::U8, "u8"),
        (MapElement::F32, "f32"),
        (MapElement::F16, "f16"),
        (MapElement::Bf16, "bf16"),
    ];

    /// Bytes per element.
    pub fn bytes(self) -> u64 {
        match self {
            MapElement::U8 => 1,
            MapElement::F32 => 4,
            MapElement::F16 | MapElement::Bf16 => 2,
        }
    }

    /// Its name (`ALL`).
    pub fn name(self) -> &'static str {
        MapElement::ALL
            .iter()
            .find(|(e, _)| *e == self)
            .map_or("u8", |(_, n)| n)
    }

    /// The element named `name` (`ALL`).
    pub fn named(name: &str) -> Option<Self> {
        MapElement::ALL
            .iter()
            .find(|(_, n)| *n == name)
            .map(|(e, _)| *e)
    }
}

/// A tile-mode map of a row-major tensor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TiledMap {
    /// Its elements.
    pub element: MapElement,
    /// Elements per dimension, innermost first.
    pub dims: Vec<u64>,
    /// Bytes from one index of dimension d + 1 to the next, for d + 1 = 1 .. rank.
    pub strides: Vec<u64>,
    /// The box in elements, innermost first.
    pub boxes: Vec<u32>,
    /// Swizzle span in bytes: 0 (none), 32, 64 or 128.
    pub swizzle: u32,
}

impl TiledMap {
    /// The map of a row-major byte tensor of `shape` (outermost first) in boxes of `boxed`
    /// (outermost first), with the `swizzle` span ([`TiledMap::of`] with bytes).
    pub fn new(shape: &[i64], boxed: &[u32], swizzle: u32) -> Result<Self, GpuError> {
        Self::of(MapElement::U8, shape, boxed, swizzle)
    }

    /// The map of a row-major tensor of `element`s of `shape` (outermost first) in boxes
    /// of `boxed` elements (outermost first), with the `swizzle` span, checked against the
    /// driver's rules: rank 1 to 5, each dimension 1 to 2^32, strides multiples of 16 bytes
    /// below 2^40, box sizes 1 to 256, the box's row at most the swizzle span and a
    /// multiple of 16 bytes.
    pub fn of(
        element: MapElement,
        shape: &[i64],
        boxed: &[u32],
        swizzle: u32,
    ) -> Result<Self, GpuError> {
        let bad = |why: String| {
            GpuError::Invalid(format!(
                "tensor map of {} shape {shape:?} in boxes of {boxed:?} (swizzle {swizzle}): \
                 {why}",
                element.name()
            ))
        };
        if !(1..=5).contains(&shape.len()) || boxed.len() != shape.len() {
            return Err(bad("expected rank 1 to 5, the box of the same rank".into()));
        }
        if !matches!(swizzle, 0 | 32 | 64 | 128) {
            return Err(bad("the swizzle is 0, 32, 64 or 128 bytes".into()));
        }
        let dims: Vec<u64> = shape.iter().rev().map(|&d| d as u64).collect();
        if shape.iter().any(|&d| !(1..=1 << 32).contains(&d)) {
            return Err(bad("each dimension has 1 to 2^32 elements".into()));
        }
        let mut strides = Vec::with_capacity(dims.len() - 1);
        let mut stride = element.bytes();
        for &d in &dims[..dims.len() - 1] {
            stride *= d;
            if !stride.is_multiple_of(16) || stride >= 1 << 40 {
                return Err(bad(format!(
                    "a stride of {stride} bytes (TMA takes multiples of 16 below 2^40)"
                )));
            }
            strides.push(stride);
        }
        let boxes: Vec<u32> = boxed.iter().rev().copied().collect();
        if boxes.iter().any(|&b| !(1..=256).contains(&b)) {
            return Err(bad("box sizes are 1 to 256".into()));
        }
        let row = boxes[0] as u64 * element.bytes();
        if !row.is_multiple_of(16) || (swizzle > 0 && row > swizzle as u64) {
            return Err(bad(format!(
                "the box's rows are {row} bytes (a multiple of 16, at most the swizzle span)"
            )));
        }
        Ok(Self {
            element,
            dims,
            strides,
            boxes,
            swizzle,
        })
    }

    /// The driver's encoding of the map of the tensor at device address `address` (16-byte
    /// aligned): no interleave, L2 promotion of 256 bytes, zeros where a box leaves the
    /// tensor (a load's; a store writes only the elements inside it).
    pub fn encode(&self, address: u64) -> Result<sys::CUtensorMap, GpuError> {
        if !address.is_multiple_of(16) {
            return Err(GpuError::Invalid(format!(
                "a tensor map's tensor at {address:#x} is not 16-byte aligned"
            )));
        }
        use sys::CUtensorMapSwizzle_enum::*;
        let swizzle = match self.swizzle {
            0 => CU_TENSOR_MAP_SWIZZLE_NONE,
            32 => CU_TENSOR_MAP_SWIZZLE_32B,
            64 => CU_TENSOR_MAP_SWIZZLE_64B,
            _ => CU_TENSOR_MAP_SWIZZLE_128B,
        };
        use sys::CUtensorMapDataType_enum::*;
        let data = match self.element {
            MapElement::U8 => CU_TENSOR_MAP_DATA_TYPE_UINT8,
            MapElement::F32 => CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
            MapElement::F16 => CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
            MapElement::Bf16 => CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
        };
        let steps = vec![1u32; self.dims.len()];
        let mut map = MaybeUninit::<sys::CUtensorMap>::zeroed();
        // SAFETY: every array holds `rank` entries (strides `rank - 1`), checked by `new`;
        // the map is written by the call and read only after it succeeded.
        let status = unsafe {
            sys::cuTensorMapEncodeTiled(
                map.as_mut_ptr(),
                data,
                self.dims.len() as u32,
                address as *mut c_void,
                self.dims.as_ptr(),
                self.strides.as_ptr(),
                self.boxes.as_ptr(),
                steps.as_ptr(),
                sys::CUtensorMapInterleave_enum::CU_TENSOR_MAP_INTERLEAVE_NONE,
                swizzle,
                sys::CUtensorMapL2promotion_enum::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                sys::CUtensorMapFloatOOBfill_enum::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
            )
        };
        match status {
            sys::cudaError_enum::CUDA_SUCCESS => {
                // SAFETY: written by the successful call.
                Ok(unsafe { map.assume_init() })
            }
            error => Err(GpuError::Driver {
                what: "cuTensorMapEncodeTiled",
                error,
            }),
        }
    }

    /// The map's 128 bytes as the kernel reads them from global memory.
    pub fn bytes(map: &sys::CUtensorMap) -> Vec<u8> {
        map.opaque.iter().flat_map(|w| w.to_le_bytes()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_go_innermost_first_with_byte_strides() {
        // wgmma-tma's A: 130 rows of 416 bytes, boxes of 128 rows x 128 bytes.
        let map = TiledMap::new(&[130, 416], &[128, 128], 128).unwrap();
        assert_eq!(map.dims, [416, 130]);
        assert_eq!(map.strides, [416]);
        assert_eq!(map.boxes, [128, 128]);
        let map = TiledMap::new(&[4, 8, 64], &[1, 8, 64], 64).unwrap();
        assert_eq!((map.dims, map.strides), (vec![64, 8, 4], vec![64, 512]));
        // `store-c=tma`'s C: 300 x 200 f32 in boxes of 64 rows x 32 columns (128 bytes).
        let map = TiledMap::of(MapElement::F32, &[300, 200], &[64, 32], 128).unwrap();
        assert_eq!((map.dims, map.strides), (vec![200, 300], vec![800]));
        assert_eq!(map.boxes, [32, 64]);
        for (element, name) in MapElement::ALL {
            assert_eq!(
                (MapElement::named(name), element.name()),
                (Some(element), name)
            );
        }
    }

    #[test]
    fn what_the_driver_would_refuse_is_refused_with_the_reason() {
        for (shape, boxed, swizzle, want) in [
            (
                &[130, 200][..],
                &[128, 128][..],
                128,
                "a stride of 200 bytes",
            ),
            (&[64, 256], &[64, 256], 128, "the box's rows are 256 bytes"),
            (&[64, 256], &[300, 128], 128, "box sizes are 1 to 256"),
            (
                &[64, 256],
                &[64, 128],
                48,
                "the swizzle is 0, 32, 64 or 128",
            ),
            (&[64, 256], &[64], 128, "the box of the same rank"),
            (&[0, 256], &[64, 128], 128, "1 to 2^32 elements"),
        ] {
            let e = TiledMap::new(shape, boxed, swizzle)
                .unwrap_err()
                .to_string();
            assert!(e.contains(want), "{e}");
        }
        // f32: strides and box rows in bytes.
        for (shape, boxed, want) in [
            (&[64, 202][..], &[64, 32][..], "a stride of 808 bytes"),
            (&[64, 256], &[64, 64], "the box's rows are 256 bytes"),
            (&[64, 256], &[64, 2], "the box's rows are 8 bytes"),
        ] {
            let e = TiledMap::of(MapElement::F32, shape, boxed, 128)
                .unwrap_err()
                .to_string();
            assert!(e.contains(want) && e.contains("f32"), "{e}");
        }
        let map = TiledMap::new(&[64, 256], &[64, 128], 128).unwrap();
        let e = map.encode(0x1008).unwrap_err().to_string();
        assert!(e.contains("not 16-byte aligned"), "{e}");
    }
}
