//! [`Chip`]: the target facts a lowering or the code generator needs, in one value passed
//! down (never global state): the GPU passes size their kernels from it (`lowp-to-nvvm`'s
//! shared memory budget and split-K), `lowp-codegen` targets LLVM with it (re-exported
//! there).

use core::fmt;
use core::str::FromStr;

/// A GPU architecture family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Vendor {
    /// NVIDIA, PTX through the NVPTX backend.
    Nvidia,
    /// AMD, code objects through the AMDGPU backend.
    Amd,
    /// The machine running lowp.
    Host,
}

/// Everything the code generator and the GPU lowerings need to know about a target.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Chip {
    /// Name as given on command lines (`sm_90a`, `gfx950`, `host`).
    pub name: &'static str,
    /// Vendor.
    pub vendor: Vendor,
    /// LLVM target triple (empty: the host's default triple).
    pub triple: &'static str,
    /// LLVM CPU name (`sm_90a`, `gfx950`; empty: the host CPU).
    pub cpu: &'static str,
    /// LLVM target features (`+ptx84`).
    pub features: &'static str,
    /// NVIDIA compute capability x 10 (90 for sm_90a), 0 elsewhere.
    pub sm: u32,
    /// PTX ISA version x 10 the NVPTX backend emits for this chip (0 elsewhere).
    pub ptx: u32,
    /// Shared memory (LDS) per block in KiB, the tiling budget of GPU lowerings.
    pub shared_kib: u32,
    /// Multiprocessors (SMs, CUs) of the part the kernels are sized for: H100 / H200 SXM
    /// for sm_90a, L40S for sm_89, B200 for sm_100a, MI300X for gfx942, MI355X for gfx950.
    /// What split-K aims to fill; other parts of the same chip have other counts (H100
    /// PCIe: 114), so it is a sizing fact, not a limit.
    pub multiprocessors: u32,
    /// Matrix instructions the chip has for narrow formats, strongest first.
    pub matrix: &'static [&'static str],
}

/// Every chip lowp knows. Facts from the vendors' ISA manuals: sm_89 (Ada) has FP8
/// `mma.sync`; sm_90a (Hopper) adds `wgmma` and TMA with 227 KiB of shared memory per block;
/// sm_100a (Blackwell) adds `tcgen05.mma` with block-scaled MX / NVFP4 kinds; gfx942 (MI300)
/// has FNUZ FP8 MFMA with 64 KiB LDS; gfx950 (MI350) adds scaled MFMA f8f6f4 with 160 KiB.
pub const CHIPS: [Chip; 6] = [
    Chip {
        name: "sm_89",
        vendor: Vendor::Nvidia,
        triple: "nvptx64-nvidia-cuda",
        cpu: "sm_89",
        // FP8 mma.sync (m16n8k32 .e4m3/.e5m2) needs PTX ISA 8.4.
        features: "+ptx84",
        sm: 89,
        ptx: 84,
        shared_kib: 99,
        multiprocessors: 142,
        matrix: &["mma.sync.m16n8k32.e4m3/e5m2"],
    },
    Chip {
        name: "sm_90a",
        vendor: Vendor::Nvidia,
        triple: "nvptx64-nvidia-cuda",
        cpu: "sm_90a",
        features: "+ptx84",
        sm: 90,
        ptx: 84,
        shared_kib: 227,
        multiprocessors: 132,
        matrix: &["wgmma.m64nNk32.e4m3/e5m2", "mma.sync.m16n8k32.e4m3/e5m2"],
    },
    Chip {
        name: "sm_100a",
        vendor: Vendor::Nvidia,
        triple: "nvptx64-nvidia-cuda",
        cpu: "sm_100a",
        // PTX ISA 8.8: the block16 scale vectors of tcgen05.mma kind::mxf4nvf4 (NVFP4).
        features: "+ptx88",
        sm: 100,
        ptx: 88,
        shared_kib: 227,
        multiprocessors: 148,
        // No wgmma: it is sm_90a only.
        matrix: &[
            "tcgen05.mma.block_scale (mxf8f6f4, mxf4, mxf4nvf4)",
            "mma.sync.m16n8k32.e4m3/e5m2",
        ],
    },
    Chip {
        name: "gfx942",
        vendor: Vendor::Amd,
        triple: "amdgcn-amd-amdhsa",
        cpu: "gfx942",
        features: "",
        sm: 0,
        ptx: 0,
        shared_kib: 64,
        multiprocessors: 304,
        matrix: &["v_mfma_f32_16x16x32_{fp8,bf8}_{fp8,bf8} (FNUZ)"],
    },
    Chip {
        name: "gfx950",
        vendor: Vendor::Amd,
        triple: "amdgcn-amd-amdhsa",
        cpu: "gfx950",
        features: "",
        sm: 0,
        ptx: 0,
        shared_kib: 160,
        multiprocessors: 256,
        matrix: &["v_mfma_scale_f32_{16x16x128,32x32x64}_f8f6f4"],
    },
    Chip {
        name: "host",
        vendor: Vendor::Host,
        triple: "",
        cpu: "",
        features: "",
        sm: 0,
        ptx: 0,
        shared_kib: 0,
        multiprocessors: 0,
        matrix: &[],
    },
];

impl fmt::Display for Chip {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

impl FromStr for Chip {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        CHIPS.iter().copied().find(|c| c.name == s).ok_or_else(|| {
            let names: Vec<&str> = CHIPS.iter().map(|c| c.name).collect();
            format!("unknown chip '{s}'; expected one of {}", names.join(", "))
        })
    }
}
