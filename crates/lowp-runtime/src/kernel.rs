//! A compiled kernel and how to launch it: its PTX, grid, block and parameters as the
//! compiler (`lowp-jit`) read them from the `gpu.launch_func`, and a manifest of `key =
//! value` lines that carries all of it to a machine with a GPU and no compiler
//! (`lowp-gpu-run`).

use std::ffi::c_void;

use cudarc::driver::CudaSlice;

use crate::tensor_map::{MapElement, TiledMap};
use crate::{Gpu, GpuError, LaunchConfig, Module};

/// One operand of the launch, in the kernel's order.
#[derive(Clone, Debug, PartialEq)]
pub enum KernelParam {
    /// An `index` constant (an i64 parameter).
    Index(i64),
    /// An `f32` constant.
    F32(f32),
    /// The entry's argument `arg`, a memref of this static shape (row-major); `arg` past
    /// the entry's arguments (`GpuKernel::arguments`) names workspace `arg - arguments`.
    MemRef {
        /// Position among the entry's arguments, then the workspaces.
        arg: usize,
        /// Its shape.
        shape: Vec<i64>,
    },
    /// A TMA tensor map (tile mode, [`TiledMap`]) of the entry's argument `arg`, a
    /// row-major tensor of `element`s of `shape`, in boxes of `boxed` (both outermost
    /// first) with the `swizzle` span: written to device memory before the launch, passed
    /// as its address (as `nvgpu.tma.create.descriptor` lowers).
    TensorMap {
        /// Position among the entry's arguments, then the workspaces.
        arg: usize,
        /// Its elements (bytes for operand codes).
        element: MapElement,
        /// Its shape.
        shape: Vec<i64>,
        /// The box.
        boxed: Vec<u32>,
        /// Swizzle span in bytes.
        swizzle: u32,
    },
}

/// A device buffer the launches of one kernel share beyond the entry's arguments
/// (`translate-once`'s translated operands and flags), allocated per binding.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Workspace {
    /// Its size in bytes.
    pub bytes: u64,
    /// The size of its elements (a memref parameter over it spans `bytes` in them).
    pub element: u32,
}

/// The launches' parameter values, with the device memory they point to (tensor maps,
/// workspaces) kept alive as long as the launches that read it: made once
/// ([`GpuKernel::bind`]), launched as often as wanted ([`GpuKernel::launch_bound`]).
pub struct Bound {
    values: Vec<Vec<u64>>,
    _maps: Vec<CudaSlice<u8>>,
    _workspaces: Vec<CudaSlice<u8>>,
}

/// A compiled kernel and how to launch it.
#[derive(Clone, Debug)]
pub struct GpuKernel {
    /// The kernel's entry name in the PTX.
    pub name: String,
    /// The chip it was compiled for (`sm_90a`, ...).
    pub chip: String,
    /// PTX text.
    pub ptx: String,
    /// Blocks in x, y, z.
    pub grid: (u32, u32, u32),
    /// Threads per block in x, y, z.
    pub block: (u32, u32, u32),
    /// Dynamic shared memory per block, bytes (the `gpu.launch_func`'s
    /// `dynamic_shared_memory_size`; 0 when the kernel has none).
    pub shared_bytes: u32,
    /// Blocks per cluster in x, y, z ((1, 1, 1): none). Fixed in the PTX
    /// (`.reqnctapercluster`), so a plain launch forms the clusters; the grid is a multiple
    /// of it.
    pub cluster: (u32, u32, u32),
    /// The operands, in order.
    pub params: Vec<KernelParam>,
    /// The entry's argument count, where there are workspaces (a parameter's `arg` past it
    /// names one).
    pub arguments: usize,
    /// Device buffers the launches share, made zeroed by [`bind`](Self::bind).
    pub workspaces: Vec<Workspace>,
    /// The launches after this one, in order, from the same PTX (each with no `then` and
    /// no workspaces of its own: these are the kernel's).
    pub then: Vec<GpuKernel>,
}

impl GpuKernel {
    /// Whether the grid is a whole number of clusters (a launch of a partial one fails in
    /// the driver with a less telling error).
    pub fn cluster_check(&self) -> Result<(), GpuError> {
        let (g, c) = (self.grid, self.cluster);
        let whole = |g: u32, c: u32| c > 0 && g.is_multiple_of(c);
        if whole(g.0, c.0) && whole(g.1, c.1) && whole(g.2, c.2) {
            Ok(())
        } else {
            Err(GpuError::Invalid(format!(
                "grid {g:?} is not a whole number of clusters of {c:?}"
            )))
        }
    }

    /// Whether each argument's device address is one the kernel may be given: present,
    /// and 16-byte aligned. The tensor-core kernels copy operand rows and whole-K scale
    /// rows with 16-byte `cp.async` (and read scales as words) from the memref's base, and
    /// TMA needs it too; a misaligned one would fault on the device (and poison the
    /// context) instead of failing here. `cuMemAlloc` gives 256.
    pub fn address_check(&self, args: &[u64]) -> Result<(), GpuError> {
        for p in &self.params {
            let arg = match p {
                KernelParam::MemRef { arg, .. } | KernelParam::TensorMap { arg, .. } => *arg,
                _ => continue,
            };
            if !self.workspaces.is_empty() && arg >= self.arguments {
                continue;
            }
            let Some(&address) = args.get(arg) else {
                return Err(GpuError::Invalid(format!(
                    "no device buffer for argument {arg} (given {})",
                    args.len()
                )));
            };
            if !address.is_multiple_of(16) {
                return Err(GpuError::Invalid(format!(
                    "argument {arg}'s device address {address:#x} is not 16-byte aligned"
                )));
            }
        }
        Ok(())
    }

    /// How the kernel forms its sums, for the bound its result is checked against: FP8
    /// `wgmma` (E4M3 / E5M2 operands) sums on Hopper's reduced-precision FP8 accumulator,
    /// which the wgmma pipeline promotes into f32 at least every 128 products (the bound
    /// takes 128: a kernel that lets the tensor cores sum longer, the register-staged one
    /// with scale blocks past 128, is held to the tighter bound, not excused); f32
    /// otherwise (f16 / bf16 instructions, `mma.sync`, decode kernels).
    pub fn accumulation(&self) -> lowp_formats::Accumulation {
        let fp8_wgmma = self
            .ptx
            .lines()
            .any(|l| l.contains("wgmma.mma_async") && (l.contains(".e4m3") || l.contains(".e5m2")));
        if fp8_wgmma {
            lowp_formats::Accumulation::Fp8TensorCore { promote: 128 }
        } else {
            lowp_formats::Accumulation::F32
        }
    }

    /// Whether the PTX is the kernel the launch describes (a bundle's `kernel.ptx` beside
    /// its `launch.txt`): it targets `chip`, declares the entry `name` with the parameters
    /// the launch passes, and the sizes it fixes fit the launch (`.reqntid` is the block,
    /// `.maxntid` holds it, `.reqnctapercluster` is the cluster, and a cluster is fixed
    /// where the launch has one). A mismatch would fail in the driver with a bare status,
    /// or run with parameters out of place.
    pub fn ptx_check(&self) -> Result<(), String> {
        std::iter::once(self)
            .chain(&self.then)
            .try_for_each(|launch| launch.ptx_check_one())
    }

    /// `ptx_check` of this launch alone.
    fn ptx_check_one(&self) -> Result<(), String> {
        let ptx = &self.ptx;
        let target = ptx
            .lines()
            .find_map(|l| l.trim().strip_prefix(".target "))
            .ok_or("the PTX has no .target line")?;
        let target = target.split([',', ' ']).next().unwrap_or_default();
        if target != self.chip {
            return Err(format!(
                "the PTX targets {target}; the launch's chip is {}",
                self.chip
            ));
        }
        // The line declaring the entry (`[.visible|.weak] .entry NAME(`, not a comment):
        // its parameter list starts after the name.
        let mut offset = 0;
        let mut start = None;
        for line in ptx.split_inclusive('\n') {
            let words = line.trim_start();
            let words = [".visible ", ".weak "]
                .iter()
                .fold(words, |w, p| w.strip_prefix(p).map_or(w, str::trim_start));
            let name = words
                .strip_prefix(".entry ")
                .map(str::trim_start)
                .and_then(|w| w.strip_prefix(self.name.as_str()))
                .map(str::trim_start);
            if let Some(rest) = name.filter(|r| r.starts_with('(')) {
                start = Some(offset + line.len() - rest.len() + 1);
                break;
            }
            offset += line.len();
        }
        let start = start.ok_or_else(|| format!("the PTX declares no entry '{}'", self.name))?;
        let rest = &ptx[start..];
        let close = rest
            .find(')')
            .ok_or_else(|| format!("entry '{}': its parameter list does not end", self.name))?;
        let declared = rest[..close].matches(".param").count();
        if declared != self.flat_param_count() {
            return Err(format!(
                "entry '{}' declares {declared} parameters; the launch passes {}",
                self.name,
                self.flat_param_count()
            ));
        }
        let open = rest[close..].find('{').map_or(rest.len(), |b| close + b);
        let directives = &rest[close + 1..open];
        // `.directive x[, y[, z]]` (missing sizes are 1).
        let sizes = |directive: &str| -> Option<Result<(u32, u32, u32), String>> {
            let line = directives
                .lines()
                .find_map(|l| l.trim().strip_prefix(directive))?;
            let n: Option<Vec<u32>> = line.split(',').map(|v| v.trim().parse().ok()).collect();
            Some(match n.as_deref() {
                Some([x]) => Ok((*x, 1, 1)),
                Some([x, y]) => Ok((*x, *y, 1)),
                Some([x, y, z]) => Ok((*x, *y, *z)),
                _ => Err(format!(
                    "entry '{}': cannot read '{directive}{line}'",
                    self.name
                )),
            })
        };
        let (b, c) = (self.block, self.cluster);
        if let Some(r) = sizes(".reqntid") {
            let r = r?;
            if r != b {
                return Err(format!(
                    "entry '{}' requires blocks of {r:?} threads; the launch's are {b:?}",
                    self.name
                ));
            }
        }
        if let Some(m) = sizes(".maxntid") {
            let m = m?;
            if b.0 > m.0 || b.1 > m.1 || b.2 > m.2 {
                return Err(format!(
                    "entry '{}' takes blocks of at most {m:?} threads; the launch's are {b:?}",
                    self.name
                ));
            }
        }
        match sizes(".reqnctapercluster") {
            Some(r) => {
                let r = r?;
                if r != c {
                    return Err(format!(
                        "entry '{}' runs in clusters of {r:?}; the launch's are {c:?}",
                        self.name
                    ));
                }
            }
            None if c != (1, 1, 1) => {
                return Err(format!(
                    "the launch has clusters of {c:?}; entry '{}' fixes none \
                     (.reqnctapercluster), so a plain launch would not form them",
                    self.name
                ))
            }
            None => {}
        }
        Ok(())
    }

    /// Parameters as the kernel declares them: 3 + 2 rank per memref, 1 per scalar or
    /// tensor map.
    pub fn flat_param_count(&self) -> usize {
        self.params
            .iter()
            .map(|p| match p {
                KernelParam::MemRef { shape, .. } => 3 + 2 * shape.len(),
                _ => 1,
            })
            .sum()
    }

    /// Launch on `gpu` with `args[i]` the device address of the entry's argument `i`
    /// ([`bind`](Self::bind), then [`launch_bound`](Self::launch_bound)).
    ///
    /// # Safety
    /// Each address must hold a buffer of its argument's shape and element size.
    pub unsafe fn launch(&self, gpu: &Gpu, module: &Module, args: &[u64]) -> Result<(), GpuError> {
        let mut bound = self.bind(gpu, args)?;
        // SAFETY: per this function's contract.
        unsafe { self.launch_bound(gpu, module, &mut bound) }
    }

    /// The parameter values for `args[i]` the device address of the entry's argument `i`:
    /// the workspaces allocated (zeroed), then each launch's parameters, every one as 8
    /// bytes (i64, pointer, or an f32 in the low half); tensor maps encoded by the driver
    /// and copied to device memory (on the launches' stream, before them).
    pub fn bind(&self, gpu: &Gpu, args: &[u64]) -> Result<Bound, GpuError> {
        if !self.workspaces.is_empty() && args.len() != self.arguments {
            return Err(GpuError::Invalid(format!(
                "the kernel takes {} arguments before its workspaces; given {}",
                self.arguments,
                args.len()
            )));
        }
        let mut workspaces = Vec::with_capacity(self.workspaces.len());
        for w in &self.workspaces {
            workspaces.push(gpu.zeros::<u8>(w.bytes.max(1) as usize)?);
        }
        let mut addresses = args.to_vec();
        addresses.extend(workspaces.iter().map(|b| gpu.address(b)));
        let mut maps = Vec::new();
        let mut values = Vec::with_capacity(1 + self.then.len());
        for launch in std::iter::once(self).chain(&self.then) {
            values.push(launch.bind_one(gpu, &addresses, args, &mut maps)?);
        }
        Ok(Bound {
            values,
            _maps: maps,
            _workspaces: workspaces,
        })
    }

    /// One launch's values (`bind`): `addresses` the arguments' then the workspaces'.
    fn bind_one(
        &self,
        gpu: &Gpu,
        addresses: &[u64],
        args: &[u64],
        maps: &mut Vec<CudaSlice<u8>>,
    ) -> Result<Vec<u64>, GpuError> {
        self.cluster_check()?;
        grid_limits(self.grid)
            .and(block_limits(self.block))
            .map_err(GpuError::Invalid)?;
        self.address_check(args)?;
        let mut values: Vec<u64> = Vec::with_capacity(self.flat_param_count());
        let address = |arg: usize| {
            addresses
                .get(arg)
                .copied()
                .ok_or_else(|| GpuError::Invalid(format!("no device buffer for argument {arg}")))
        };
        for p in &self.params {
            match p {
                KernelParam::TensorMap {
                    arg,
                    element,
                    shape,
                    boxed,
                    swizzle,
                } => {
                    let map =
                        TiledMap::of(*element, shape, boxed, *swizzle)?.encode(address(*arg)?)?;
                    let on_device = gpu.upload(&TiledMap::bytes(&map))?;
                    values.push(gpu.address(&on_device));
                    maps.push(on_device);
                }
                KernelParam::Index(v) => values.push(*v as u64),
                KernelParam::F32(v) => values.push(v.to_bits() as u64),
                KernelParam::MemRef { arg, shape } => {
                    let ptr = address(*arg)?;
                    values.extend([ptr, ptr, 0]);
                    values.extend(shape.iter().map(|&d| d as u64));
                    let mut stride = 1i64;
                    let mut strides: Vec<u64> = shape
                        .iter()
                        .rev()
                        .map(|&d| {
                            let s = stride;
                            stride *= d;
                            s as u64
                        })
                        .collect();
                    strides.reverse();
                    values.extend(strides);
                }
            }
        }
        Ok(values)
    }

    /// Launch with parameters [`bind`](Self::bind) made (for the same GPU).
    ///
    /// # Safety
    /// The addresses `bound` was made with must still hold their buffers.
    pub unsafe fn launch_bound(
        &self,
        gpu: &Gpu,
        module: &Module,
        bound: &mut Bound,
    ) -> Result<(), GpuError> {
        for (launch, values) in std::iter::once(self)
            .chain(&self.then)
            .zip(&mut bound.values)
        {
            // Each value passed by address, as cuLaunchKernel takes them.
            let mut ptrs: Vec<*mut c_void> = values
                .iter_mut()
                .map(|v| v as *mut u64 as *mut c_void)
                .collect();
            let kernel = module.kernel(&launch.name)?;
            let cfg = LaunchConfig {
                grid: launch.grid,
                block: launch.block,
                shared_bytes: launch.shared_bytes,
            };
            // SAFETY: the parameters follow the kernel's signature (from the same module);
            // the buffers per this function's contract.
            unsafe { gpu.launch(kernel, cfg, &mut ptrs) }?;
        }
        Ok(())
    }

    /// The launch as a manifest (the PTX travels beside it): `name`, `chip`, `grid`,
    /// `block`, `shared` (dynamic shared memory bytes), `cluster` (only for clusters), then
    /// one `param` line per parameter (`memref ARG D0 D1 ..`, `index V`, `f32 V`,
    /// `tensormap ARG swizzle S box B0 B1 .. shape D0 D1 ..`, then `element T` where the
    /// tensor is not bytes: f32, f16, bf16); with workspaces,
    /// `arguments = N` and a `workspace = BYTES ELEMENT` line each; each later launch from
    /// `then = NAME` on, with its own `grid` to `param` lines.
    pub fn to_manifest(&self) -> String {
        let mut s = format!("name = {}\nchip = {}\n", self.name, self.chip);
        if !self.workspaces.is_empty() {
            s.push_str(&format!("arguments = {}\n", self.arguments));
            for w in &self.workspaces {
                s.push_str(&format!("workspace = {} {}\n", w.bytes, w.element));
            }
        }
        s.push_str(&self.launch_lines());
        for next in &self.then {
            s.push_str(&format!("then = {}\n", next.name));
            s.push_str(&next.launch_lines());
        }
        s
    }

    /// The manifest lines of this launch from `grid` on.
    fn launch_lines(&self) -> String {
        let mut s = format!(
            "grid = {} {} {}\nblock = {} {} {}\nshared = {}\n",
            self.grid.0,
            self.grid.1,
            self.grid.2,
            self.block.0,
            self.block.1,
            self.block.2,
            self.shared_bytes
        );
        if self.cluster != (1, 1, 1) {
            let (x, y, z) = self.cluster;
            s.push_str(&format!("cluster = {x} {y} {z}\n"));
        }
        for p in &self.params {
            let line = match p {
                KernelParam::Index(v) => format!("index {v}"),
                KernelParam::F32(v) => format!("f32 {:?}", v),
                KernelParam::MemRef { arg, shape } => {
                    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
                    format!("memref {arg} {}", dims.join(" "))
                        .trim_end()
                        .to_string()
                }
                KernelParam::TensorMap {
                    arg,
                    element,
                    shape,
                    boxed,
                    swizzle,
                } => {
                    let words = |v: Vec<String>| v.join(" ");
                    let typed = match element {
                        MapElement::U8 => String::new(),
                        other => format!(" element {}", other.name()),
                    };
                    format!(
                        "tensormap {arg} swizzle {swizzle} box {} shape {}{typed}",
                        words(boxed.iter().map(|b| b.to_string()).collect()),
                        words(shape.iter().map(|d| d.to_string()).collect())
                    )
                }
            };
            s.push_str(&format!("param = {line}\n"));
        }
        s
    }

    /// Read a manifest ([`to_manifest`](Self::to_manifest)) and the kernel's PTX.
    pub fn from_manifest(text: &str, ptx: String) -> Result<Self, String> {
        let (mut chip, mut arguments) = (None, None);
        let mut workspaces = Vec::new();
        // The launches' lines: the first's from the top, each later one's from its `then`.
        let mut launches: Vec<(Option<String>, Vec<Entry>)> = vec![(None, Vec::new())];
        for (line, key, value) in lowp_formats::problem::manifest_entries(text)? {
            let at = |e: String| format!("line {line}: {e}");
            match key.as_str() {
                "then" | "name" if value.is_empty() => {
                    return Err(at(format!("{key}: the kernel's entry is empty")))
                }
                "then" => launches.push((Some(value), Vec::new())),
                "name" | "chip" | "arguments" | "workspace" if launches.len() > 1 => {
                    return Err(at(format!(
                        "'{key}' after a 'then': it belongs to the kernel, before its later \
                         launches"
                    )))
                }
                "name" => launches[0].0 = Some(value),
                // The driver loads PTX for NVIDIA chips; lowp's are sm_89 and later.
                "chip" if !lowp_chip(&value) => {
                    return Err(at(format!(
                        "chip: expected an NVIDIA chip lowp targets (sm_89, sm_90a, \
                         sm_100a), found '{value}'"
                    )))
                }
                "chip" => chip = Some(value),
                "arguments" => {
                    arguments =
                        Some(value.parse::<usize>().map_err(|_| {
                            at(format!("arguments: expected a count, found '{value}'"))
                        })?)
                }
                "workspace" => {
                    let n: Vec<u64> = value
                        .split_whitespace()
                        .map(|x| x.parse::<u64>())
                        .collect::<Result<_, _>>()
                        .map_err(|_| {
                            at(format!(
                                "workspace: expected BYTES ELEMENT, found '{value}'"
                            ))
                        })?;
                    match n[..] {
                        [bytes, element @ (1 | 2 | 4 | 8)] if bytes > 0 && bytes % element == 0 => {
                            workspaces.push(Workspace {
                                bytes,
                                element: element as u32,
                            })
                        }
                        _ => {
                            return Err(at(format!(
                                "workspace: expected BYTES (a positive multiple of ELEMENT) and \
                                 ELEMENT (1, 2, 4 or 8), found '{value}'"
                            )))
                        }
                    }
                }
                _ => launches.last_mut().expect("one").1.push((line, key, value)),
            }
        }
        let chip = chip.ok_or("the launch manifest has no 'chip'")?;
        if !workspaces.is_empty() && arguments.is_none() {
            return Err("the launch manifest has workspaces and no 'arguments'".into());
        }
        let mut kernels = Vec::with_capacity(launches.len());
        for (name, lines) in launches {
            let name = name.ok_or("the launch manifest has no 'name'")?;
            kernels.push(Self::launch_from(name, &chip, &ptx, lines)?);
        }
        let mut first = kernels.remove(0);
        first.arguments = arguments.unwrap_or(0);
        first.workspaces = workspaces;
        first.then = kernels;
        // Every buffer a parameter names exists.
        let buffers = first.arguments + first.workspaces.len();
        for launch in std::iter::once(&first).chain(&first.then) {
            for p in &launch.params {
                if let KernelParam::MemRef { arg, .. } | KernelParam::TensorMap { arg, .. } = p {
                    if !first.workspaces.is_empty() && *arg >= buffers {
                        return Err(format!(
                            "launch '{}': a parameter names buffer {arg}; there are {} \
                             arguments and {} workspaces",
                            launch.name,
                            first.arguments,
                            first.workspaces.len()
                        ));
                    }
                }
            }
        }
        Ok(first)
    }

    /// One launch from its manifest lines (`grid` to `param`).
    fn launch_from(name: String, chip: &str, ptx: &str, lines: Vec<Entry>) -> Result<Self, String> {
        let (mut grid, mut block) = (None, None);
        let mut shared_bytes = 0;
        let mut cluster = (1, 1, 1);
        let mut params = Vec::new();
        let triple = |v: &str, what: &str| -> Result<(u32, u32, u32), String> {
            let n: Vec<u32> = v
                .split_whitespace()
                .map(|x| x.parse::<u32>())
                .collect::<Result<_, _>>()
                .map_err(|_| format!("{what}: expected three sizes, found '{v}'"))?;
            match n[..] {
                [x, y, z] if x > 0 && y > 0 && z > 0 => Ok((x, y, z)),
                _ => Err(format!(
                    "{what}: expected three positive sizes, found '{v}'"
                )),
            }
        };
        for (line, key, value) in lines {
            let value = value.as_str();
            // Each entry's error names its line.
            let mut entry = || -> Result<(), String> {
                match key.as_str() {
                    "grid" => {
                        let g = triple(value, "grid")?;
                        grid_limits(g)?;
                        grid = Some(g)
                    }
                    "block" => {
                        let b = triple(value, "block")?;
                        block_limits(b)?;
                        block = Some(b)
                    }
                    "cluster" => cluster = triple(value, "cluster")?,
                    "shared" => {
                        shared_bytes = value.parse::<u32>().map_err(|_| {
                            format!("shared: expected a byte count, found '{value}'")
                        })?;
                        if shared_bytes > MAX_SHARED_BYTES {
                            return Err(format!(
                                "shared: {shared_bytes} bytes is more than a block has on \
                                 any chip lowp targets ({MAX_SHARED_BYTES}: 227 KiB)"
                            ));
                        }
                    }
                    "param" => params.push(param(value)?),
                    other => return Err(format!("unknown key '{other}'")),
                }
                Ok(())
            };
            entry().map_err(|e| format!("line {line}: {e}"))?;
        }
        Ok(Self {
            grid: grid.ok_or_else(|| "the launch manifest has no 'grid'".to_string())?,
            block: block.ok_or_else(|| "the launch manifest has no 'block'".to_string())?,
            name,
            chip: chip.to_string(),
            ptx: ptx.to_string(),
            shared_bytes,
            cluster,
            params,
            arguments: 0,
            workspaces: Vec::new(),
            then: Vec::new(),
        })
    }
}

/// A manifest line: its number, key and value.
type Entry = (usize, String, String);

/// The most dynamic shared memory a block can opt into on the chips lowp targets (227 KiB
/// on sm_90 and sm_100; sm_89 has less, which its launch refuses).
const MAX_SHARED_BYTES: u32 = 227 * 1024;

/// Whether `chip` is an NVIDIA chip lowp targets: `sm_` and a version of 89 or later,
/// with at most an `a` (architecture-specific) suffix.
fn lowp_chip(chip: &str) -> bool {
    let Some(version) = chip.strip_prefix("sm_") else {
        return false;
    };
    let digits = version.strip_suffix('a').unwrap_or(version);
    !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && digits.parse::<u32>().is_ok_and(|v| v >= 89)
}

/// CUDA's grid limits: x below 2^31, y and z at most 65535.
fn grid_limits((x, y, z): (u32, u32, u32)) -> Result<(), String> {
    if x > i32::MAX as u32 || y > 65535 || z > 65535 {
        return Err(format!(
            "grid: {x} {y} {z} is beyond CUDA's limits (x < 2^31, y and z <= 65535)"
        ));
    }
    Ok(())
}

/// CUDA's block limit: 1024 threads.
fn block_limits((x, y, z): (u32, u32, u32)) -> Result<(), String> {
    if x as u64 * y as u64 * z as u64 > 1024 {
        return Err(format!(
            "block: {x} {y} {z} is more than CUDA's 1024 threads"
        ));
    }
    Ok(())
}

/// One `param` value of a manifest.
fn param(v: &str) -> Result<KernelParam, String> {
    let words: Vec<&str> = v.split_whitespace().collect();
    let bad = || {
        format!(
            "param '{v}': expected 'memref ARG DIMS..', 'index V', 'f32 V' or \
             'tensormap ARG swizzle S box B.. shape D.. [element u8|f32|f16|bf16]'"
        )
    };
    match words.as_slice() {
        ["index", x] => x.parse().map(KernelParam::Index).map_err(|_| bad()),
        ["f32", x] => x.parse().map(KernelParam::F32).map_err(|_| bad()),
        ["memref", arg, dims @ ..] => Ok(KernelParam::MemRef {
            arg: arg.parse().map_err(|_| bad())?,
            shape: dims
                .iter()
                .map(|d| d.parse::<i64>().ok().filter(|&d| d >= 0))
                .collect::<Option<_>>()
                .ok_or_else(bad)?,
        }),
        ["tensormap", arg, "swizzle", swizzle, "box", rest @ ..] => {
            let at = rest.iter().position(|w| *w == "shape").ok_or_else(bad)?;
            let (boxed, shape) = (&rest[..at], &rest[at + 1..]);
            let (shape, element) = match shape {
                [dims @ .., "element", name] => (dims, MapElement::named(name).ok_or_else(bad)?),
                dims => (dims, MapElement::U8),
            };
            if boxed.is_empty() || boxed.len() != shape.len() {
                return Err(bad());
            }
            let shape: Vec<i64> = shape
                .iter()
                .map(|d| d.parse::<i64>().ok().filter(|&d| d > 0))
                .collect::<Option<_>>()
                .ok_or_else(bad)?;
            let boxed: Vec<u32> = boxed
                .iter()
                .map(|b| b.parse::<u32>().ok())
                .collect::<Option<_>>()
                .ok_or_else(bad)?;
            let swizzle = swizzle.parse().map_err(|_| bad())?;
            // What the driver would refuse (a swizzle of 7, a box of 0), refused here:
            // before any driver is loaded, with the manifest's line.
            TiledMap::of(element, &shape, &boxed, swizzle)
                .map_err(|e| format!("param '{v}': {e}"))?;
            Ok(KernelParam::TensorMap {
                arg: arg.parse().map_err(|_| bad())?,
                element,
                shape,
                boxed,
                swizzle,
            })
        }
        _ => Err(bad()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel() -> GpuKernel {
        GpuKernel {
            name: "mm_kernel".into(),
            chip: "sm_90a".into(),
            ptx: "// ptx".into(),
            grid: (3, 2, 1),
            block: (128, 1, 1),
            shared_bytes: 132096,
            cluster: (1, 1, 1),
            params: vec![
                KernelParam::MemRef {
                    arg: 0,
                    shape: vec![48, 64],
                },
                KernelParam::Index(128),
                KernelParam::F32(0.25),
                KernelParam::MemRef {
                    arg: 2,
                    shape: vec![],
                },
                KernelParam::TensorMap {
                    arg: 0,
                    element: MapElement::U8,
                    shape: vec![48, 64],
                    boxed: vec![16, 64],
                    swizzle: 128,
                },
                KernelParam::TensorMap {
                    arg: 2,
                    element: MapElement::F32,
                    shape: vec![48, 40],
                    boxed: vec![64, 32],
                    swizzle: 128,
                },
            ],
            arguments: 0,
            workspaces: Vec::new(),
            then: Vec::new(),
        }
    }

    /// PTX as lowp-jit makes it for `kernel()`: 14 parameters, 128 threads.
    fn ptx(entry: &str, params: usize, directives: &str) -> String {
        let list: Vec<String> = (0..params)
            .map(|i| format!("\t.param .u64 {entry}_param_{i}"))
            .collect();
        format!(
            "//\n.version 8.4\n.target sm_90a\n.address_size 64\n\n.visible .entry \
             {entry}(\n{}\n)\n{directives}{{\n\tret;\n}}\n",
            list.join(",\n")
        )
    }

    /// FP8 `wgmma` (either operand E4M3 or E5M2) is checked with Hopper's FP8 accumulator
    /// in the bound; f16 / bf16 `wgmma` and FP8 `mma.sync` with f32 accumulation.
    #[test]
    fn fp8_wgmma_kernels_are_checked_with_the_fp8_accumulator() {
        let with = |line: &str| GpuKernel {
            ptx: format!("{}\n\t{line}\n", ptx("mm_kernel", 14, "")),
            ..kernel()
        };
        let tc = lowp_formats::Accumulation::Fp8TensorCore { promote: 128 };
        for line in [
            "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 {%f1}, %rd1, %rd2, p, 1, 1;",
            "wgmma.mma_async.sync.aligned.m64n16k32.f32.e5m2.e4m3 {%f1}, %rd1, %rd2, p, 1, 1;",
        ] {
            assert_eq!(with(line).accumulation(), tc, "{line}");
        }
        for line in [
            "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%f1}, %rd1, %rd2, p, 1, 1, 1, 1;",
            "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%f1}, %rd1, %rd2, p, 1, 1, 1, 1;",
            "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%f1}, {%r1}, {%r2}, {%f2};",
            "ld.global.u8 %rs1, [%rd1];",
        ] {
            assert_eq!(with(line).accumulation(), lowp_formats::Accumulation::F32, "{line}");
        }
    }

    #[test]
    fn the_ptx_must_be_the_launched_kernel() {
        let good = GpuKernel {
            ptx: ptx("mm_kernel", 14, ".maxntid 128, 1, 1\n"),
            ..kernel()
        };
        good.ptx_check().unwrap();
        // A space before the parameter list is PTX too; an entry named in a comment is not
        // the entry.
        GpuKernel {
            ptx: good.ptx.replace("mm_kernel(", "mm_kernel ("),
            ..kernel()
        }
        .ptx_check()
        .unwrap();
        let commented = GpuKernel {
            ptx: format!("// .entry other(\n{}", good.ptx),
            name: "other".into(),
            ..kernel()
        };
        assert!(commented
            .ptx_check()
            .unwrap_err()
            .contains("declares no entry 'other'"));
        let clustered = GpuKernel {
            ptx: ptx(
                "mm_kernel",
                14,
                ".reqntid 128\n.explicitcluster\n.reqnctapercluster 3, 1, 1\n",
            ),
            cluster: (3, 1, 1),
            ..kernel()
        };
        clustered.ptx_check().unwrap();
        let cases = [
            (
                GpuKernel {
                    chip: "sm_89".into(),
                    ..good.clone()
                },
                "the PTX targets sm_90a; the launch's chip is sm_89",
            ),
            (
                GpuKernel {
                    name: "other".into(),
                    ..good.clone()
                },
                "the PTX declares no entry 'other'",
            ),
            (
                GpuKernel {
                    ptx: ptx("mm_kernel", 13, ""),
                    ..kernel()
                },
                "entry 'mm_kernel' declares 13 parameters; the launch passes 14",
            ),
            (
                GpuKernel {
                    block: (256, 1, 1),
                    ..good.clone()
                },
                "entry 'mm_kernel' takes blocks of at most (128, 1, 1) threads; the launch's are (256, 1, 1)",
            ),
            (
                GpuKernel {
                    block: (64, 1, 1),
                    ..clustered.clone()
                },
                "entry 'mm_kernel' requires blocks of (128, 1, 1) threads",
            ),
            (
                GpuKernel {
                    cluster: (2, 1, 1),
                    ..clustered.clone()
                },
                "entry 'mm_kernel' runs in clusters of (3, 1, 1); the launch's are (2, 1, 1)",
            ),
            (
                GpuKernel {
                    cluster: (3, 1, 1),
                    ..good.clone()
                },
                "the launch has clusters of (3, 1, 1); entry 'mm_kernel' fixes none",
            ),
            (
                GpuKernel {
                    ptx: ptx("mm_kernel", 14, ".maxntid 128, x\n"),
                    ..kernel()
                },
                "entry 'mm_kernel': cannot read '.maxntid 128, x'",
            ),
        ];
        for (k, want) in cases {
            let err = k.ptx_check().unwrap_err();
            assert!(err.contains(want), "{err}");
        }
    }

    #[test]
    fn manifests_round_trip() {
        let k = kernel();
        let back = GpuKernel::from_manifest(&k.to_manifest(), k.ptx.clone()).unwrap();
        assert_eq!(back.name, k.name);
        assert_eq!(back.chip, k.chip);
        assert_eq!((back.grid, back.block), (k.grid, k.block));
        assert_eq!(back.shared_bytes, k.shared_bytes);
        assert_eq!(back.cluster, (1, 1, 1));
        assert!(!k.to_manifest().contains("cluster"));
        assert_eq!(back.params, k.params);
        // 3 + 2 x 2 for the matrix, 1 + 1 for the scalars, 3 for the rank-0 memref, 1 for
        // each tensor map's address.
        assert_eq!(back.flat_param_count(), 14);
        assert!(k
            .to_manifest()
            .contains("param = tensormap 0 swizzle 128 box 16 64 shape 48 64\n"));
        assert!(k
            .to_manifest()
            .contains("param = tensormap 2 swizzle 128 box 64 32 shape 48 40 element f32\n"));
        // Clusters (split-K) travel as one more line.
        let clustered = GpuKernel {
            cluster: (3, 1, 1),
            ..k
        };
        let text = clustered.to_manifest();
        assert!(text.contains("cluster = 3 1 1\n"));
        let back = GpuKernel::from_manifest(&text, String::new()).unwrap();
        assert_eq!(back.cluster, (3, 1, 1));
    }

    /// A kernel of several launches sharing workspaces (`translate-once`): the later
    /// launches' sections after their `then`, each with its own keys; the workspaces and
    /// the entry's argument count before them.
    #[test]
    fn launches_and_workspaces_round_trip() {
        let second = GpuKernel {
            name: "fp8".into(),
            grid: (8, 1, 1),
            params: vec![KernelParam::MemRef {
                arg: 5,
                shape: vec![4, 16],
            }],
            ..kernel()
        };
        let k = GpuKernel {
            arguments: 5,
            workspaces: vec![
                Workspace {
                    bytes: 64,
                    element: 1,
                },
                Workspace {
                    bytes: 16,
                    element: 4,
                },
            ],
            then: vec![second],
            ..kernel()
        };
        let text = k.to_manifest();
        assert!(text.contains("arguments = 5\nworkspace = 64 1\nworkspace = 16 4\n"));
        assert!(text.contains("then = fp8\ngrid = 8 1 1\n"));
        let back = GpuKernel::from_manifest(&text, k.ptx.clone()).unwrap();
        assert_eq!((back.arguments, &back.workspaces), (5, &k.workspaces));
        assert_eq!(back.then.len(), 1);
        assert_eq!(back.then[0].name, "fp8");
        assert_eq!(back.then[0].grid, (8, 1, 1));
        assert_eq!(back.then[0].params, k.then[0].params);
        assert_eq!(back.params, k.params);
        for (edit, want) in [
            (
                text.replace("arguments = 5\n", ""),
                "workspaces and no 'arguments'",
            ),
            (
                text.replace("workspace = 16 4", "workspace = 15 4"),
                "a positive multiple",
            ),
            (
                text.replace("param = memref 5 4 16", "param = memref 7 4 16"),
                "names buffer 7",
            ),
            (
                text.replace("then = fp8", "then ="),
                "then: the kernel's entry is empty",
            ),
            (format!("{text}grid = 1 1 1\n"), "'grid' is given twice"),
            (format!("{text}chip = sm_90a\n"), "'chip' after a 'then'"),
            (format!("{text}speed = 3\n"), "unknown key 'speed'"),
        ] {
            let e = GpuKernel::from_manifest(&edit, String::new()).unwrap_err();
            assert!(e.contains(want), "{e}");
        }
    }

    #[test]
    fn bad_manifests_say_where() {
        let k = kernel().to_manifest();
        for (edit, want) in [
            (
                k.replace("grid = 3 2 1", "grid = 3 2"),
                "line 3: grid: expected three",
            ),
            (
                k.replace("chip = sm_90a", "chip = sm_90aaa"),
                "found 'sm_90aaa'",
            ),
            (
                k.replace("chip = sm_90a", "chip = sm_+90"),
                "found 'sm_+90'",
            ),
            (
                k.replace("shared = 132096", "shared = 4294967295"),
                "line 5: shared: 4294967295 bytes is more than a block has",
            ),
            (
                format!("{k}grid = 1 1 1\n"),
                "'grid' is given twice (first on line 3)",
            ),
            (
                k.replace("block = 128 1 1", "block = 0 1 1"),
                "three positive sizes",
            ),
            (
                k.replace("param = index 128", "param = index x"),
                "line 7: param 'index x'",
            ),
            (
                k.replace("shared = 132096", "shared = -1"),
                "line 5: shared: expected a byte count",
            ),
            (k.replace("name = mm_kernel\n", ""), "no 'name'"),
            (
                k.replace("name = mm_kernel", "name ="),
                "name: the kernel's entry is empty",
            ),
            (
                k.replace("chip = sm_90a", "chip = sm_70"),
                "chip: expected an NVIDIA chip lowp targets",
            ),
            (
                k.replace("chip = sm_90a", "chip = gfx942"),
                "found 'gfx942'",
            ),
            (
                k.replace("grid = 3 2 1", "grid = 3 78125 1"),
                "grid: 3 78125 1 is beyond CUDA's limits",
            ),
            (
                k.replace("block = 128 1 1", "block = 2048 1 1"),
                "block: 2048 1 1 is more than CUDA's 1024 threads",
            ),
            (
                format!("{k}cluster = 2 0 1\n"),
                "cluster: expected three positive",
            ),
            (format!("{k}speed = 3\n"), "unknown key 'speed'"),
            (format!("{k}param memref\n"), "expected 'key = value'"),
            (
                k.replace("box 16 64 shape 48 64", "box 16 shape 48 64"),
                "line 10: param 'tensormap",
            ),
            (
                k.replace("box 16 64 shape 48 64", "box 16 64 shape 48 0"),
                "'tensormap ARG swizzle S box B.. shape D..",
            ),
            (
                k.replace("shape 48 40 element f32", "shape 48 40 element f64"),
                "line 11: param 'tensormap 2",
            ),
            // Well-formed words the driver would refuse: refused as the manifest is read.
            (
                k.replace("swizzle 128 box 16 64", "swizzle 7 box 16 64"),
                "line 10: param 'tensormap 0 swizzle 7 box 16 64 shape 48 64': tensor map of",
            ),
            (
                k.replace("swizzle 128 box 16 64", "swizzle 7 box 16 64"),
                "the swizzle is 0, 32, 64 or 128 bytes",
            ),
            (
                k.replace("box 16 64 shape 48 64", "box 0 64 shape 48 64"),
                "box sizes are 1 to 256",
            ),
            (
                k.replace(
                    "box 64 32 shape 48 40 element f32",
                    "box 64 64 shape 48 40 element f32",
                ),
                "line 11: param 'tensormap 2 swizzle 128 box 64 64 shape 48 40 element f32': \
                 tensor map of",
            ),
        ] {
            let e = GpuKernel::from_manifest(&edit, String::new()).unwrap_err();
            assert!(e.contains(want), "{e}");
        }
    }

    #[test]
    fn a_grid_of_partial_clusters_is_refused_before_any_launch() {
        let k = GpuKernel {
            cluster: (2, 1, 1),
            ..kernel()
        };
        // The check comes before the GPU is touched: no device needed.
        let e = k.cluster_check().unwrap_err();
        assert!(
            e.to_string().contains("not a whole number of clusters"),
            "{e}"
        );
        assert!(kernel().cluster_check().is_ok());
    }

    #[test]
    fn misaligned_or_missing_addresses_are_refused_before_any_launch() {
        let k = kernel();
        assert!(k
            .address_check(&[0x7f00_0000_0100, 0, 0x7f00_0000_0200])
            .is_ok());
        let e = k
            .address_check(&[0x7f00_0000_0100, 0, 0x7f00_0000_0204])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("argument 2's device address 0x7f0000000204 is not 16-byte aligned"),
            "{e}"
        );
        let e = k.address_check(&[0x100]).unwrap_err().to_string();
        assert!(
            e.contains("no device buffer for argument 2 (given 1)"),
            "{e}"
        );
    }

    #[test]
    fn launching_without_a_gpu_is_an_error_not_a_crash() {
        if crate::driver_present() {
            return;
        }
        assert!(matches!(Gpu::open(0), Err(GpuError::NoDriver)));
    }
}
