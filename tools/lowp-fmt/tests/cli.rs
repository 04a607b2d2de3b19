//! lowp-fmt from the outside: outputs, stdin, and that every bad input is one line on stderr
//! with exit status 2, never a panic.

use std::io::Write;
use std::process::{Command, Output, Stdio};

fn run(args: &[&str], stdin: Option<&str>) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_lowp-fmt"));
    c.args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let mut pipe = child.stdin.take().unwrap();
    // The child may exit before reading (a usage error): a broken pipe is fine.
    let _ = pipe.write_all(stdin.unwrap_or("").as_bytes());
    drop(pipe);
    child.wait_with_output().unwrap()
}

fn stdout(args: &[&str]) -> String {
    let o = run(args, None);
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

#[test]
fn encode_decode_quantize() {
    assert_eq!(
        stdout(&["encode", "f8e4m3", "1.0625", "500", "nan", "-0"]),
        "0x38\n0x7e\n0x00\n0x80\n"
    );
    assert_eq!(
        stdout(&["decode", "f8e5m2", "0x7c", "0xfc", "0x7f", "0x80", "0x01", "60"]),
        "inf\n-inf\nnan\n-0\n1.5258789e-5\n1\n"
    );
    assert_eq!(
        stdout(&["quantize", "f4e3m0", "1.4", "3", "100", "-0.1"]),
        "1\n2\n16\n-0\n"
    );
    assert_eq!(stdout(&["decode", "f4e2m1", "0b0111", "15"]), "6\n-6\n");
    assert_eq!(
        stdout(&["encode", "f8e4m3fnuz", "-0", "-1e-9"]),
        "0x00\n0x00\n"
    );
}

#[test]
fn stdin_values() {
    let o = run(&["encode", "f4e2m1"], Some("0.25 0.75\n5\n"));
    assert!(o.status.success());
    assert_eq!(String::from_utf8(o.stdout).unwrap(), "0x00\n0x02\n0x06\n");
}

#[test]
fn info_and_grid() {
    let info = stdout(&["info", "f8e4m3fnuz"]);
    for want in [
        "bias          8",
        "max_finite    240",
        "is_fnuz       yes",
        "has_inf       no",
        "kernel_id     0x2",
    ] {
        assert!(info.contains(want), "missing {want:?} in\n{info}");
    }
    let info = stdout(&["info", "f6e3m2b2"]);
    assert!(info.contains("!lowp.mf<e3m2, bias = 2>"), "{info}");
    let grid = stdout(&["grid", "f4e3m0"]);
    assert_eq!(grid.lines().count(), 16);
    assert!(grid.contains("0x7  0111  16\n"), "{grid}");
    assert_eq!(stdout(&["grid", "f8e5m2"]).lines().count(), 256);
}

#[test]
fn demo_prints_a_round_trip() {
    let d = stdout(&["demo"]);
    assert!(d.contains("f4e2m1 with mx scales"), "{d}");
    let last = d.lines().last().unwrap();
    assert!(last.starts_with("roundtrip: max_abs_err="), "{last}");
    let d = stdout(&["demo", "nvfp4+global", "f4e2m1"]);
    assert!(d.contains("global scale"), "{d}");
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let cases: &[(&[&str], &str)] = &[
        (&[], "missing command"),
        (&["frobnicate"], "unknown command 'frobnicate'"),
        (&["encode", "f9e4m4", "1"], "unknown format 'f9e4m4'"),
        (&["encode", "f8e4m3", "one"], "'one' is not a number"),
        (
            &["decode", "f4e2m1", "0x10"],
            "code '0x10' is out of range for f4e2m1",
        ),
        (&["decode", "f8e4m3", "0xzz"], "'0xzz' is not a code"),
        (&["decode", "f8e4m3", "256"], "out of range"),
        (&["info"], "needs a FORMAT"),
        (&["info", "f8e4m3", "extra"], "takes only a FORMAT"),
        (&["demo", "mx/0"], "unknown scale layout 'mx/0'"),
    ];
    for (args, want) in cases {
        let o = run(args, None);
        let err = String::from_utf8(o.stderr).unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(err.starts_with("lowp-fmt: "), "{err}");
    }
}

#[test]
fn garbage_never_panics() {
    // A fixed pseudo-random spray of arguments: only exit 0 or 2, never a panic (101) or signal.
    let words = [
        "info",
        "grid",
        "encode",
        "decode",
        "quantize",
        "demo",
        "f8e4m3",
        "f4e3m0",
        "f1e0m0",
        "f8e7m0b-1",
        "0x",
        "0xff",
        "-inf",
        "nan",
        "1e40",
        "-",
        "",
        "mx/3",
        "blockwise/0x1",
        "f4e2m1",
        "\u{1F600}",
        "0b",
        "99999999999999999999",
        "f8e4m3fnuz",
        "--help",
    ];
    let mut state = 12345u64;
    for _ in 0..150 {
        let mut args = Vec::new();
        for _ in 0..(state % 4 + 1) {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            args.push(words[(state >> 33) as usize % words.len()]);
        }
        let o = run(&args, Some("1 2 x"));
        let code = o.status.code();
        assert!(
            code == Some(0) || code == Some(2),
            "{args:?} -> {code:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}
