//! `lowp-fmt`: inspect lowp's number formats from the shell.
//!
//! ```text
//! lowp-fmt info FORMAT                 bits, bias, range, special values, kernel id
//! lowp-fmt grid FORMAT                 every code with its value
//! lowp-fmt encode FORMAT [x ...]       one 0x.. code a line
//! lowp-fmt decode FORMAT [code ...]    shortest round-trip decimal, nan, inf, -inf, -0
//! lowp-fmt quantize FORMAT [x ...]     the nearest representable value
//! lowp-fmt demo [LAYOUT] [FORMAT]      a format grid and a quantize/dequantize round trip
//! ```
//! With no values, `encode`/`decode`/`quantize` read whitespace-separated values from stdin.
//! Bad input prints one line on stderr naming it and what is accepted, and exits 2.

use std::io::{self, BufWriter, Read, Write};
use std::process::ExitCode;

use lowp_formats::testing::SplitMix64;
use lowp_formats::{quantize, QuantizeOptions, ScaleLayout, ScaledFormat, FORMAT_NAMES_HELP};

const USAGE: &str = "usage: lowp-fmt info|grid|encode|decode|quantize FORMAT [values...]
       lowp-fmt demo [LAYOUT] [FORMAT]
  info      bits, bias, max_finite, min normal/subnormal, inf/NaN, kernel_id
  grid      every code with its value
  encode    one 0x.. code per input value
  decode    the value of each code (0x.., 0b.. or decimal)
  quantize  the nearest representable value of each input
  demo      a format grid and a quantize/dequantize round trip (default: mx f4e2m1)
With no values, encode/decode/quantize read whitespace-separated values from stdin.";

/// A user error: printed as one line, exit status 2.
struct UsageError(String);

type Result<T> = std::result::Result<T, UsageError>;

#[macro_use]
#[path = "../../common/output.rs"]
mod output;

/// Stdout behind lowp-fmt's buffer: a failed write is kept for [`output::finish`], as
/// `say!` keeps one (a closed pipe, `lowp-fmt grid f8e4m3 | head`, is not worth a message).
struct Checked<W: Write>(W);

impl<W: Write> Checked<W> {
    fn keep<T>(r: io::Result<T>) -> io::Result<T> {
        if let Err(e) = &r {
            if e.kind() != io::ErrorKind::BrokenPipe {
                let _ = output::STDOUT_LOST.set(e.to_string());
            }
        }
        r
    }
}

impl<W: Write> Write for Checked<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        Self::keep(self.0.write(buf))
    }
    fn flush(&mut self) -> io::Result<()> {
        Self::keep(self.0.flush())
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let stdout = io::stdout();
    let mut out = BufWriter::new(Checked(stdout.lock()));
    let r = run(&args, &mut out);
    let _ = out.flush();
    match r {
        Ok(()) => output::finish("lowp-fmt", ExitCode::SUCCESS),
        Err(UsageError(msg)) => {
            warn!("lowp-fmt: {msg}");
            ExitCode::from(2)
        }
    }
}

fn run(args: &[String], out: &mut impl Write) -> Result<()> {
    let Some(cmd) = args.first() else {
        return Err(UsageError(format!("missing command\n{USAGE}")));
    };
    if matches!(cmd.as_str(), "-h" | "--help" | "help") {
        let _ = writeln!(out, "{USAGE}");
        return Ok(());
    }
    if cmd == "demo" {
        return demo(&args[1..], out);
    }
    if !matches!(
        cmd.as_str(),
        "info" | "grid" | "encode" | "decode" | "quantize"
    ) {
        return Err(UsageError(format!(
            "unknown command '{cmd}'; expected info, grid, encode, decode, quantize or demo"
        )));
    }
    let fname = args.get(1).ok_or_else(|| {
        UsageError(format!(
            "'{cmd}' needs a FORMAT; expected {FORMAT_NAMES_HELP}"
        ))
    })?;
    let format = parse_format(fname)?;
    let values = || -> Result<Vec<String>> {
        if args.len() > 2 {
            Ok(args[2..].to_vec())
        } else {
            let mut s = String::new();
            io::stdin()
                .read_to_string(&mut s)
                .map_err(|e| UsageError(format!("cannot read stdin: {e}")))?;
            Ok(s.split_whitespace().map(str::to_owned).collect())
        }
    };
    if matches!(cmd.as_str(), "info" | "grid") && args.len() > 2 {
        return Err(UsageError(format!(
            "'{cmd}' takes only a FORMAT, found '{}'",
            args[2]
        )));
    }
    // Write errors (a closed pipe) end output quietly.
    let _ = match cmd.as_str() {
        "info" => info(format, out),
        "grid" => grid(format, out),
        "encode" => {
            let xs = values()?
                .iter()
                .map(|v| parse_value(v))
                .collect::<Result<Vec<_>>>()?;
            xs.iter()
                .try_for_each(|&x| writeln!(out, "{:#04x}", format.encode(x)))
        }
        "decode" => {
            let codes = values()?
                .iter()
                .map(|v| parse_code(v, format))
                .collect::<Result<Vec<_>>>()?;
            codes
                .iter()
                .try_for_each(|&c| writeln!(out, "{}", show(format.decode(c))))
        }
        "quantize" => {
            let xs = values()?
                .iter()
                .map(|v| parse_value(v))
                .collect::<Result<Vec<_>>>()?;
            xs.iter()
                .try_for_each(|&x| writeln!(out, "{}", show(format.quantize(x))))
        }
        _ => unreachable!("command checked above"),
    };
    Ok(())
}

fn parse_format(s: &str) -> Result<ScaledFormat> {
    s.parse().map_err(UsageError)
}

fn parse_value(s: &str) -> Result<f32> {
    match s.to_ascii_lowercase().as_str() {
        "nan" | "+nan" | "-nan" => return Ok(f32::NAN),
        "inf" | "+inf" | "infinity" => return Ok(f32::INFINITY),
        "-inf" | "-infinity" => return Ok(f32::NEG_INFINITY),
        _ => {}
    }
    s.parse::<f32>().map_err(|_| {
        UsageError(format!(
            "'{s}' is not a number; expected a decimal such as 1.5, -3e-2, nan, inf or -inf"
        ))
    })
}

fn parse_code(s: &str, f: ScaledFormat) -> Result<u8> {
    let parsed = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u32::from_str_radix(h, 16).ok()
    } else if let Some(b) = s.strip_prefix("0b") {
        u32::from_str_radix(b, 2).ok()
    } else {
        s.parse::<u32>().ok()
    };
    let max = f.code_count() - 1;
    match parsed {
        Some(c) if c <= max => Ok(c as u8),
        Some(_) => Err(UsageError(format!(
            "code '{s}' is out of range for {f} ({} bits): expected 0x00..={max:#04x}",
            f.bit_width()
        ))),
        None => Err(UsageError(format!(
            "'{s}' is not a code; expected hex (0x1f), binary (0b0101) or decimal, 0..={max} for {f}"
        ))),
    }
}

/// The shortest decimal that reads back to the same f32, with `nan`, `inf`, `-inf`, `-0`.
fn show(x: f32) -> String {
    if x.is_nan() {
        "nan".into()
    } else if x.is_infinite() {
        if x > 0.0 { "inf" } else { "-inf" }.into()
    } else if x == 0.0 {
        if x.is_sign_negative() { "-0" } else { "0" }.into()
    } else if x.abs() < 1e-4 || x.abs() >= 1e16 {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}

fn yes(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

fn info(f: ScaledFormat, out: &mut impl Write) -> io::Result<()> {
    let (e, m, bias) = f.fields();
    writeln!(out, "format        {f}")?;
    writeln!(
        out,
        "kind          {}",
        if f.is_custom() {
            "custom (all finite)"
        } else {
            "named"
        }
    )?;
    writeln!(
        out,
        "mlir_type     {}",
        f.mlir_name()
            .map_or_else(|| format!("!lowp.mf<{}>", mf_params(f)), str::to_owned)
    )?;
    writeln!(
        out,
        "bits          {} (sign 1, exponent {e}, mantissa {m})",
        f.bit_width()
    )?;
    writeln!(out, "bias          {bias}")?;
    writeln!(out, "max_finite    {}", show(f.max_finite()))?;
    writeln!(out, "min_normal    {}", show(f.min_normal()))?;
    if m > 0 {
        writeln!(out, "min_subnormal {}", show(f.min_positive()))?;
    } else {
        writeln!(out, "min_subnormal none (no mantissa bits)")?;
    }
    writeln!(out, "emax          {}", f.emax())?;
    writeln!(out, "has_inf       {}", yes(f.has_inf()))?;
    writeln!(out, "has_nan       {}", yes(f.has_nan()))?;
    writeln!(out, "is_fnuz       {}", yes(f.is_fnuz()))?;
    writeln!(out, "native_fp8    {}", yes(f.is_native_fp8()))?;
    writeln!(
        out,
        "values        {} finite",
        f.representable_values().len()
    )?;
    writeln!(
        out,
        "fp8_embedding {}",
        f.fp8_embedding()
            .map_or("none (decode path on tensor cores)".to_string(), |t| {
                format!("{t} (exact)")
            })
    )?;
    writeln!(out, "kernel_id     {:#x}", f.kernel_id())
}

/// The parameters of the dialect's custom minifloat type: `e3m0`, or `e3m0, bias = 5`.
fn mf_params(f: ScaledFormat) -> String {
    let (e, m, bias) = f.fields();
    if bias == ScaledFormat::ieee_bias(e) {
        format!("e{e}m{m}")
    } else {
        format!("e{e}m{m}, bias = {bias}")
    }
}

fn grid(f: ScaledFormat, out: &mut impl Write) -> io::Result<()> {
    let digits = if f.bit_width() > 4 { 2 } else { 1 };
    for c in 0..f.code_count() {
        let bits = format!("{c:0w$b}", w = f.bit_width() as usize);
        writeln!(out, "0x{c:0digits$x}  {bits}  {}", show(f.decode(c as u8)))?;
    }
    Ok(())
}

fn demo(args: &[String], out: &mut impl Write) -> Result<()> {
    if args.len() > 2 {
        return Err(UsageError(format!(
            "'demo' takes at most LAYOUT and FORMAT, found '{}'",
            args[2]
        )));
    }
    let layout: ScaleLayout = match args.first() {
        Some(s) => s.parse().map_err(UsageError)?,
        None => ScaleLayout::MX,
    };
    let format = match args.get(1) {
        Some(s) => parse_format(s)?,
        None => ScaledFormat::F4E2M1,
    };
    layout.check_format(format).map_err(UsageError)?;
    let _ = demo_body(layout, format, out);
    Ok(())
}

fn demo_body(layout: ScaleLayout, format: ScaledFormat, out: &mut impl Write) -> io::Result<()> {
    writeln!(out, "== {format}: every code ==")?;
    if format.bit_width() <= 6 {
        grid(format, out)?;
    } else {
        let vals = format.representable_values();
        writeln!(
            out,
            "{} finite values, max {} (use `lowp-fmt grid {format}`)",
            vals.len(),
            show(format.max_finite())
        )?;
    }
    let (rows, cols) = (64, 256);
    let mut rng = SplitMix64::new(2026);
    let data = rng.normal_vec(rows * cols);
    let q = quantize(
        &data,
        rows,
        cols,
        format,
        layout,
        QuantizeOptions::default(),
    )
    .map_err(io::Error::other)?;
    let back = q.dequantize();
    let (mut max_abs, mut err2, mut sig2) = (0.0f64, 0.0f64, 0.0f64);
    for (&x, &y) in data.iter().zip(&back) {
        let d = (x as f64 - y as f64).abs();
        max_abs = max_abs.max(d);
        err2 += d * d;
        sig2 += (x as f64) * (x as f64);
    }
    let rel_rms = (err2 / sig2).sqrt();
    writeln!(out, "\n== quantize / dequantize round trip: {rows}x{cols} N(0,1), {format} with {layout} scales ({}) ==", layout.scale_dtype())?;
    let (sr, sc) = layout.scale_shape(rows, cols);
    writeln!(
        out,
        "scales        {sr}x{sc}, first row: {}",
        q.scales
            .values
            .iter()
            .take(sc.min(8))
            .map(|&s| show(s))
            .collect::<Vec<_>>()
            .join(" ")
    )?;
    if let Some(g) = q.scales.global {
        writeln!(out, "global scale {}", show(g))?;
    }
    writeln!(
        out,
        "first values {}",
        data.iter()
            .take(6)
            .map(|x| format!("{x:.4}"))
            .collect::<Vec<_>>()
            .join(" ")
    )?;
    writeln!(
        out,
        "dequantized   {}",
        back.iter()
            .take(6)
            .map(|x| format!("{x:.4}"))
            .collect::<Vec<_>>()
            .join(" ")
    )?;
    writeln!(
        out,
        "roundtrip: max_abs_err={max_abs:.4e} rel_rms_err={rel_rms:.4e} sqnr_db={:.2}",
        -20.0 * rel_rms.log10()
    )
}
