//! Scaled-matmul problems as the numeric contract states them, with no compiler attached: a
//! [`MatmulSpec`] (sizes, formats, layouts, packing, bias, result type), its seeded random
//! inputs quantized by this crate, the bytes of every argument as a kernel takes them, and
//! the check of a result against the f64 oracle with its rigorous bound. `lowp-jit` builds
//! and runs the IR of a spec; the GPU runner (`lowp-gpu-run`), which links no LLVM, uses
//! this module alone. A spec travels between them as a manifest of `key = value` lines.

use crate::testing::SplitMix64;
use crate::{
    quantize, scaled_matmul_f64, ErrorStats, QuantizeOptions, QuantizedTensor, ScaleDtype,
    ScaleLayout, ScaledFormat,
};

/// What one argument of a scaled-matmul entry carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// A's codes.
    Lhs,
    /// A's scales.
    LhsScales,
    /// A's NVFP4 global scale.
    LhsGlobal,
    /// B's codes.
    Rhs,
    /// B's scales.
    RhsScales,
    /// B's NVFP4 global scale.
    RhsGlobal,
    /// The bias.
    Bias,
    /// The result.
    Out,
}

impl Role {
    /// The role's name in manifests (`lhs`, `lhs_scales`, .., `out`).
    pub const fn name(self) -> &'static str {
        match self {
            Role::Lhs => "lhs",
            Role::LhsScales => "lhs_scales",
            Role::LhsGlobal => "lhs_global",
            Role::Rhs => "rhs",
            Role::RhsScales => "rhs_scales",
            Role::RhsGlobal => "rhs_global",
            Role::Bias => "bias",
            Role::Out => "out",
        }
    }

    /// Roles from their names, separated by spaces (`roles = lhs lhs_scales ..`).
    pub fn parse_list(text: &str) -> Result<Vec<Role>, String> {
        text.split_whitespace()
            .map(|w| {
                ROLES.into_iter().find(|r| r.name() == w).ok_or_else(|| {
                    let names: Vec<&str> = ROLES.iter().map(|r| r.name()).collect();
                    format!("unknown role '{w}'; expected one of {}", names.join(", "))
                })
            })
            .collect()
    }
}

/// Every role, in the order of an entry's arguments.
pub const ROLES: [Role; 8] = [
    Role::Lhs,
    Role::LhsScales,
    Role::LhsGlobal,
    Role::Rhs,
    Role::RhsScales,
    Role::RhsGlobal,
    Role::Bias,
    Role::Out,
];

/// A scaled matmul `M x K` by `N x K` with its formats and layouts.
#[derive(Clone, Debug, PartialEq)]
pub struct MatmulSpec {
    /// M.
    pub m: usize,
    /// N.
    pub n: usize,
    /// K.
    pub k: usize,
    /// A's format.
    pub lhs: ScaledFormat,
    /// B's format.
    pub rhs: ScaledFormat,
    /// A's scale layout.
    pub lhs_layout: ScaleLayout,
    /// B's scale layout.
    pub rhs_layout: ScaleLayout,
    /// A's codes packed two per byte (4-bit formats).
    pub lhs_packed: bool,
    /// B's codes packed two per byte.
    pub rhs_packed: bool,
    /// Add a bias of N values.
    pub bias: bool,
    /// Store the result as bf16.
    pub bf16: bool,
}

/// Random inputs of a [`MatmulSpec`], quantized by `lowp-formats`.
pub struct MatmulInputs {
    /// A.
    pub a: QuantizedTensor,
    /// B.
    pub b: QuantizedTensor,
    /// Bias.
    pub bias: Option<Vec<f32>>,
}

/// File names of the operands in an inputs directory (`--inputs DIR`).
const INPUT_FILES: [(Role, &str); 7] = [
    (Role::Lhs, "a.bin"),
    (Role::LhsScales, "sa.bin"),
    (Role::LhsGlobal, "ga.bin"),
    (Role::Rhs, "b.bin"),
    (Role::RhsScales, "sb.bin"),
    (Role::RhsGlobal, "gb.bin"),
    (Role::Bias, "bias.bin"),
];

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Little-endian f32 values.
pub fn f32_from(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// Little-endian bf16 values, widened to f32 exactly.
pub fn bf16_from(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(2)
        .map(|c| f32::from_bits((u16::from_le_bytes([c[0], c[1]]) as u32) << 16))
        .collect()
}

impl MatmulInputs {
    /// The raw bytes of one operand as the entry takes it: codes one per byte (two for
    /// packed FP4), one-byte scales for E8M0 / UE4M3, little-endian f32 otherwise.
    fn bytes(&self, role: Role) -> Option<Vec<u8>> {
        let scales = |q: &QuantizedTensor| {
            q.scale_bytes()
                .unwrap_or_else(|| f32_bytes(&q.scales.values))
        };
        match role {
            Role::Lhs => Some(self.a.codes.clone()),
            Role::LhsScales => Some(scales(&self.a)),
            Role::LhsGlobal => self.a.scales.global.map(|g| g.to_le_bytes().to_vec()),
            Role::Rhs => Some(self.b.codes.clone()),
            Role::RhsScales => Some(scales(&self.b)),
            Role::RhsGlobal => self.b.scales.global.map(|g| g.to_le_bytes().to_vec()),
            Role::Bias => self.bias.as_ref().map(|b| f32_bytes(b)),
            Role::Out => None,
        }
    }

    /// Write the operands into `dir` (`a.bin`, `sa.bin`, `ga.bin`, `b.bin`, `sb.bin`,
    /// `gb.bin`, `bias.bin`, those the problem has); one of those files the problem has no
    /// operand for, left by an earlier save, is removed ([`load`](Self::load) refuses it).
    pub fn save(&self, dir: &std::path::Path) -> Result<(), String> {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create '{}': {e}", dir.display()))?;
        for (role, name) in INPUT_FILES {
            let path = dir.join(name);
            match self.bytes(role) {
                Some(bytes) => std::fs::write(&path, bytes)
                    .map_err(|e| format!("cannot write '{}': {e}", path.display()))?,
                None if path.is_file() => std::fs::remove_file(&path)
                    .map_err(|e| format!("cannot remove '{}': {e}", path.display()))?,
                None => {}
            }
        }
        Ok(())
    }

    /// Read the operands of `spec` from `dir` (the layout [`save`](Self::save) writes). Each
    /// file must hold exactly the bytes the operand's memref has.
    pub fn load(spec: &MatmulSpec, dir: &std::path::Path) -> Result<Self, String> {
        // An operand file the problem has no operand for (a bias, a global scale) was
        // saved for another problem: refused rather than left unread.
        let roles = spec.roles();
        if let Some((_, name)) = INPUT_FILES
            .iter()
            .find(|(r, name)| !roles.contains(r) && dir.join(name).exists())
        {
            return Err(format!(
                "'{}' is there, but the problem has no such operand (inputs saved for \
                 another problem?)",
                dir.join(name).display()
            ));
        }
        // Each argument's file, exactly as long as the argument (`role_len`).
        let read = |role: Role| -> Result<Vec<u8>, String> {
            use std::io::Read;
            let name = INPUT_FILES
                .iter()
                .find(|(r, _)| *r == role)
                .map(|(_, n)| *n)
                .expect("every input role has a file");
            let len = spec.role_len(role) as usize;
            let path = dir.join(name);
            let cannot = |e: std::io::Error| format!("cannot read '{}': {e}", path.display());
            let file = std::fs::File::open(&path).map_err(cannot)?;
            // A regular file's size is known before reading it; anything else (a device,
            // a pipe) is read no further than one byte past what the operand needs.
            let size = file.metadata().map_err(cannot)?;
            if size.is_file() && size.len() != len as u64 {
                return Err(format!(
                    "'{}' holds {} bytes, the operand needs {len}",
                    path.display(),
                    size.len()
                ));
            }
            let mut bytes = Vec::new();
            file.take(len as u64 + 1)
                .read_to_end(&mut bytes)
                .map_err(cannot)?;
            if bytes.len() != len {
                let more = if bytes.len() > len { "more than " } else { "" };
                return Err(format!(
                    "'{}' holds {more}{} bytes, the operand needs {len}",
                    path.display(),
                    bytes.len().min(len)
                ));
            }
            Ok(bytes)
        };
        let tensor = |[codes, scales, global]: [Role; 3],
                      rows: usize,
                      f: ScaledFormat,
                      l: ScaleLayout,
                      packed: bool|
         -> Result<QuantizedTensor, String> {
            let codes = read(codes)?;
            let dtype = l.scale_dtype();
            let values = match dtype {
                ScaleDtype::UE8M0 | ScaleDtype::UE4M3 => read(scales)?
                    .iter()
                    .map(|&b| dtype.decode_byte(b).expect("one-byte dtype"))
                    .collect(),
                _ => f32_from(&read(scales)?),
            };
            let global = if l.has_global() {
                Some(f32_from(&read(global)?)[0])
            } else {
                None
            };
            Ok(QuantizedTensor {
                format: f,
                layout: l,
                rows,
                cols: spec.k,
                packed,
                codes,
                scales: crate::Scales { values, global },
            })
        };
        let a = tensor(
            [Role::Lhs, Role::LhsScales, Role::LhsGlobal],
            spec.m,
            spec.lhs,
            spec.lhs_layout,
            spec.lhs_packed,
        )?;
        let b = tensor(
            [Role::Rhs, Role::RhsScales, Role::RhsGlobal],
            spec.n,
            spec.rhs,
            spec.rhs_layout,
            spec.rhs_packed,
        )?;
        let bias = if spec.bias {
            Some(f32_from(&read(Role::Bias)?))
        } else {
            None
        };
        Ok(Self { a, b, bias })
    }

    /// Put special values into the operands (where the formats have them): +inf in `A[0][0]`
    /// against a zero in `B[1][0]` (inf * 0 = NaN in `out[0][1]`), a NaN code in `A[1][1]`,
    /// -inf in `B[3][4]` and a NaN code in `B[4][5]`, the largest finite magnitudes
    /// elsewhere, and a NaN block scale in B when B has several.
    pub fn inject_specials(&mut self) {
        let set = |q: &mut QuantizedTensor, r, c, code| q.set_code(r, c, code);
        let (fa, fb) = (self.a.format, self.b.format);
        let inf = |f: ScaledFormat| {
            if f.has_inf() {
                f.max_finite_code() + 1
            } else {
                f.max_finite_code()
            }
        };
        let nan = |f: ScaledFormat| if f.is_fnuz() { 0x80 } else { 0x7F };
        set(&mut self.a, 0, 0, inf(fa));
        set(&mut self.b, 1, 0, 0);
        if fa.has_nan() {
            set(&mut self.a, 1, 1, nan(fa));
        }
        set(&mut self.b, 3, 4, inf(fb) | fb.sign_mask());
        if fb.has_nan() {
            set(&mut self.b, 4, 5, nan(fb));
        }
        set(&mut self.a, 2, 2, fa.max_finite_code() | fa.sign_mask());
        set(&mut self.b, 2, 3, fb.max_finite_code());
        if self.b.scales.values.len() > 1 {
            self.b.scales.values[1] = f32::NAN;
        }
    }

    /// Zero the last `tail` of K (all of it where `tail` is past it) in both operands, +0
    /// and -0 codes in turn (+0 alone where -0's pattern is NaN), and give every scale
    /// block inside those columns what a quantizer gives an all-zero block: E8M0's least,
    /// 2^-127 (`log2(0)` clamped, as torchao's MX casts do), else 0. K padded up to a
    /// kernel's multiple with zeros looks so.
    pub fn zero_tail(&mut self, tail: usize) {
        for q in [&mut self.a, &mut self.b] {
            let k = q.cols;
            let from = k - tail.min(k);
            let negative_zero = if q.format.is_fnuz() {
                0
            } else {
                q.format.sign_mask()
            };
            for r in 0..q.rows {
                for c in from..k {
                    let code = if (r + c).is_multiple_of(2) {
                        0
                    } else {
                        negative_zero
                    };
                    q.set_code(r, c, code);
                }
            }
            let (rows, cols) = q.layout.scale_shape(q.rows, k);
            let block = q.layout.k_block(k).max(1);
            let zero = match q.layout.scale_dtype() {
                ScaleDtype::UE8M0 => ScaleDtype::UE8M0_MIN,
                _ => 0.0,
            };
            for j in (0..cols).filter(|j| j * block >= from) {
                for i in 0..rows {
                    q.scales.values[i * cols + j] = zero;
                }
            }
        }
    }
}

/// A check against the oracle.
#[derive(Clone, Copy, Debug)]
pub struct CheckReport {
    /// Error statistics (f32 results; for bf16 with the bf16 rounding allowed for).
    pub stats: ErrorStats,
    /// Whether every output is within its bound.
    pub passed: bool,
}

impl MatmulSpec {
    /// Check that the dialect accepts this problem and that this machine has the memory to
    /// run it; the error says why not.
    pub fn validate(&self) -> Result<(), String> {
        self.validate_problem()?;
        self.check_memory()
    }

    /// Check that the dialect accepts this problem (formats, layouts, sizes); what only
    /// compiles it (printing IR or a kernel) needs no more.
    pub fn validate_problem(&self) -> Result<(), String> {
        for (what, f, l, packed) in [
            ("lhs", self.lhs, self.lhs_layout, self.lhs_packed),
            ("rhs", self.rhs, self.rhs_layout, self.rhs_packed),
        ] {
            l.validate().map_err(|e| format!("{what}: {e}"))?;
            l.check_format(f).map_err(|e| format!("{what}: {e}"))?;
            if packed && f.bit_width() != 4 {
                return Err(format!(
                    "{what}: --packed needs a 4-bit format, {f} has {} bits",
                    f.bit_width()
                ));
            }
        }
        if (self.lhs_packed || self.rhs_packed) && self.k % 2 == 1 {
            return Err(format!("packed operands need an even K, found {}", self.k));
        }
        if self.m == 0 || self.n == 0 || self.k == 0 {
            return Err(format!(
                "sizes must be at least 1, found {}x{}x{}",
                self.m, self.n, self.k
            ));
        }
        let block = crate::partial_sum_len(self.lhs_layout, self.rhs_layout, self.k);
        crate::check_f32_products(self.lhs, self.rhs, block).map_err(|e| e.to_string())
    }

    /// Check that this machine has the memory one run takes ([`Self::bytes_needed`]).
    pub fn check_memory(&self) -> Result<(), String> {
        let need = self.bytes_needed();
        let available = available_memory();
        if need > available {
            return Err(format!(
                "a {}x{}x{} problem needs about {:.1} GiB (inputs, codes, kernel workspace, \
                 oracle); this machine has {:.1} GiB available",
                self.m,
                self.n,
                self.k,
                need as f64 / (1u64 << 30) as f64,
                available as f64 / (1u64 << 30) as f64
            ));
        }
        Ok(())
    }

    /// A generous estimate of the memory one run takes: f32 inputs and their codes, the
    /// kernel's decoded operands and f32 workspace, the result and the f64 oracle.
    pub fn bytes_needed(&self) -> u64 {
        let (m, n, k) = (self.m as u64, self.n as u64, self.k as u64);
        let operands = m.saturating_add(n).saturating_mul(k);
        operands
            .saturating_mul(4 + 1 + 4)
            .saturating_add(m.saturating_mul(n).saturating_mul(4 + 4 + 16))
    }

    /// `2 M N K`.
    pub fn flops(&self) -> f64 {
        2.0 * self.m as f64 * self.n as f64 * self.k as f64
    }

    /// The arguments of the entry, in order.
    pub fn roles(&self) -> Vec<Role> {
        ROLES
            .into_iter()
            .filter(|r| match r {
                Role::LhsGlobal => self.lhs_layout.has_global(),
                Role::RhsGlobal => self.rhs_layout.has_global(),
                Role::Bias => self.bias,
                _ => true,
            })
            .collect()
    }

    /// Seeded random inputs: normal values with a few large rows, quantized.
    pub fn inputs(&self, seed: u64) -> MatmulInputs {
        let mut rng = SplitMix64::new(seed);
        let mut tensor = |rows: usize, f: ScaledFormat, l: ScaleLayout, packed: bool| {
            let data: Vec<f32> = (0..rows * self.k)
                .map(|i| rng.normal() * if (i / self.k) % 7 == 3 { 8.0 } else { 1.0 })
                .collect();
            quantize(
                &data,
                rows,
                self.k,
                f,
                l,
                QuantizeOptions {
                    packed,
                    ..Default::default()
                },
            )
            .expect("validated spec")
        };
        let a = tensor(self.m, self.lhs, self.lhs_layout, self.lhs_packed);
        let b = tensor(self.n, self.rhs, self.rhs_layout, self.rhs_packed);
        let bias = self.bias.then(|| rng.normal_vec(self.n));
        MatmulInputs { a, b, bias }
    }

    /// Bytes of one element of `role`'s argument as the entry's memref holds it: codes and
    /// one-byte scales 1 (packed codes one byte per pair: the memref's last dimension
    /// counts bytes), a bf16 result 2, f32 scales, globals, bias and result 4.
    pub fn role_element_bytes(&self, role: Role) -> u64 {
        let scale = |l: ScaleLayout| match l.scale_dtype() {
            ScaleDtype::UE8M0 | ScaleDtype::UE4M3 => 1,
            _ => 4,
        };
        match role {
            Role::Lhs | Role::Rhs => 1,
            Role::LhsScales => scale(self.lhs_layout),
            Role::RhsScales => scale(self.rhs_layout),
            Role::Out if self.bf16 => 2,
            _ => 4,
        }
    }

    /// The length in bytes of `role`'s argument, as [`role_bytes`](Self::role_bytes) makes
    /// it (without the inputs).
    pub fn role_len(&self, role: Role) -> u64 {
        let (m, n, k) = (self.m as u64, self.n as u64, self.k as u64);
        let codes = |rows: u64, packed: bool| rows * if packed { k.div_ceil(2) } else { k };
        let elements = match role {
            Role::Lhs => codes(m, self.lhs_packed),
            Role::LhsScales => self.lhs_layout.scale_count(self.m, self.k) as u64,
            Role::Rhs => codes(n, self.rhs_packed),
            Role::RhsScales => self.rhs_layout.scale_count(self.n, self.k) as u64,
            Role::LhsGlobal | Role::RhsGlobal => 1,
            Role::Bias => n,
            Role::Out => m * n,
        };
        elements * self.role_element_bytes(role)
    }

    /// The bytes of one argument as the entry reads them (codes, scale bytes or
    /// little-endian f32), for copying to a device. The result role is poisoned: 0xFF bytes,
    /// NaN in f32 and bf16, so an element the kernel does not write fails the check.
    pub fn role_bytes(&self, role: Role, inputs: &MatmulInputs) -> Vec<u8> {
        let scales = |q: &QuantizedTensor| {
            q.scale_bytes()
                .unwrap_or_else(|| f32_bytes(&q.scales.values))
        };
        match role {
            Role::Lhs => inputs.a.codes.clone(),
            Role::LhsScales => scales(&inputs.a),
            Role::LhsGlobal => f32_bytes(&[inputs.a.scales.global.unwrap_or(0.0)]),
            Role::Rhs => inputs.b.codes.clone(),
            Role::RhsScales => scales(&inputs.b),
            Role::RhsGlobal => f32_bytes(&[inputs.b.scales.global.unwrap_or(0.0)]),
            Role::Bias => f32_bytes(inputs.bias.as_deref().unwrap_or(&[])),
            Role::Out => vec![0xFF; self.role_len(Role::Out) as usize],
        }
    }

    /// A result read back as bytes (f32 or bf16, little-endian) as f32 values.
    pub fn result_from_bytes(&self, bytes: &[u8]) -> Vec<f32> {
        if self.bf16 {
            bf16_from(bytes)
        } else {
            f32_from(bytes)
        }
    }

    /// The f64 oracle's result on `inputs` (row-major M x N).
    pub fn oracle(&self, inputs: &MatmulInputs) -> Vec<f64> {
        self.reference(inputs).values
    }

    fn reference(&self, inputs: &MatmulInputs) -> crate::matmul::Reference {
        scaled_matmul_f64(
            &inputs.a.as_operand(),
            &inputs.b.as_operand(),
            inputs.bias.as_deref(),
        )
        .expect("validated spec")
    }

    /// Compare a result with the f64 oracle.
    pub fn check(&self, inputs: &MatmulInputs, got: &[f32]) -> CheckReport {
        self.check_accumulated(inputs, got, crate::matmul::Accumulation::F32)
    }

    /// [`MatmulSpec::check`] of a kernel whose sums were formed as `accumulation` says
    /// (`Reference::check_accumulated`).
    pub fn check_accumulated(
        &self,
        inputs: &MatmulInputs,
        got: &[f32],
        accumulation: crate::matmul::Accumulation,
    ) -> CheckReport {
        let r = self.reference(inputs);
        let stored = if self.bf16 {
            crate::Stored::Bf16
        } else {
            crate::Stored::F32
        };
        let stats = r.check_accumulated(got, 1.0, stored, accumulation);
        CheckReport {
            passed: stats.passed(),
            stats,
        }
    }

    /// The spec as a manifest: one `key = value` line per field.
    pub fn to_manifest(&self) -> String {
        format!(
            "m = {}\nn = {}\nk = {}\nlhs = {}\nrhs = {}\nlhs_layout = {}\nrhs_layout = {}\n\
             lhs_packed = {}\nrhs_packed = {}\nbias = {}\nbf16 = {}\n",
            self.m,
            self.n,
            self.k,
            self.lhs,
            self.rhs,
            self.lhs_layout,
            self.rhs_layout,
            self.lhs_packed,
            self.rhs_packed,
            self.bias,
            self.bf16
        )
    }

    /// The manifest's fields on one line, `; ` apart: what a kernel bundle's `launch.txt`
    /// records as the problem its kernel was compiled for.
    pub fn one_line(&self) -> String {
        self.to_manifest().lines().collect::<Vec<_>>().join("; ")
    }

    /// Read a manifest ([`to_manifest`](Self::to_manifest); other keys are left to the
    /// caller, `#` starts a comment). Every field is required; the spec is validated.
    pub fn from_manifest(text: &str) -> Result<Self, String> {
        let fields: std::collections::HashMap<String, String> = manifest_entries(text)?
            .into_iter()
            .map(|(_, k, v)| (k, v))
            .collect();
        let get = |key: &str| {
            fields
                .get(key)
                .map(String::as_str)
                .ok_or_else(|| format!("the manifest has no '{key}'"))
        };
        let size = |key: &str| -> Result<usize, String> {
            get(key)?
                .parse()
                .map_err(|_| format!("'{key}' is not a size: '{}'", get(key).unwrap_or("")))
        };
        let flag = |key: &str| -> Result<bool, String> {
            match get(key)? {
                "true" => Ok(true),
                "false" => Ok(false),
                v => Err(format!("'{key}' is not true or false: '{v}'")),
            }
        };
        let spec = Self {
            m: size("m")?,
            n: size("n")?,
            k: size("k")?,
            lhs: get("lhs")?.parse().map_err(|e| format!("lhs: {e}"))?,
            rhs: get("rhs")?.parse().map_err(|e| format!("rhs: {e}"))?,
            lhs_layout: get("lhs_layout")?
                .parse()
                .map_err(|e| format!("lhs_layout: {e}"))?,
            rhs_layout: get("rhs_layout")?
                .parse()
                .map_err(|e| format!("rhs_layout: {e}"))?,
            lhs_packed: flag("lhs_packed")?,
            rhs_packed: flag("rhs_packed")?,
            bias: flag("bias")?,
            bf16: flag("bf16")?,
        };
        spec.validate()?;
        Ok(spec)
    }
}

/// The `key = value` lines of a manifest with their line numbers (1-based); blank lines and
/// `#` comments are skipped, anything else (and a key given twice, but `param`) is an
/// error naming the line.
pub fn manifest_entries(text: &str) -> Result<Vec<(usize, String, String)>, String> {
    let mut entries = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let (key, value) = line
            .split_once('=')
            .ok_or_else(|| format!("line {}: expected 'key = value', found '{line}'", i + 1))?;
        let key = key.trim();
        // Every key but `param` (one line per kernel parameter), `workspace` (one per
        // workspace) and `then` (one per later launch, each starting a section of its
        // own keys) is given once in its section: a second would silently win.
        let section = entries
            .iter()
            .rposition(|(_, k, _): &(usize, String, String)| k == "then")
            .map_or(0, |t| t + 1);
        if !matches!(key, "param" | "workspace" | "then") {
            if let Some((first, _, _)) = entries[section..].iter().find(|(_, k, _)| k == key) {
                return Err(format!(
                    "line {}: '{key}' is given twice (first on line {first})",
                    i + 1
                ));
            }
        }
        entries.push((i + 1, key.to_string(), value.trim().to_string()));
    }
    Ok(entries)
}

/// `MemAvailable` of /proc/meminfo, or 16 GiB where it cannot be read.
pub fn available_memory() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("MemAvailable:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kib| kib.parse::<u64>().ok())
        })
        .map_or(16 << 30, |kib| kib * 1024)
}
