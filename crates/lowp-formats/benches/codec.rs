//! Slice encode/decode: lowp's fast paths (table decode, branch-free encode) against the
//! straightforward per-value reference, for every named format and two custom ones.
//! Criterion reports time per element (throughput in elements).
//!
//! `cargo bench -p lowp-formats` (add `-- decode` or `-- encode` to filter).

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use lowp_formats::lowp_codec::{reference, Codec};
use lowp_formats::testing::SplitMix64;
use lowp_formats::ScaledFormat;

const N: usize = 1 << 16;

fn formats() -> Vec<ScaledFormat> {
    let mut v = ScaledFormat::NAMED.to_vec();
    v.push(ScaledFormat::custom(3, 0));
    v.push(ScaledFormat::custom(3, 4));
    v
}

/// Values across the format's whole range, with edge inputs mixed in: exact ties, subnormals,
/// values past max_finite, ±0, ±inf and NaN.
fn inputs(f: ScaledFormat) -> Vec<f32> {
    let mut rng = SplitMix64::new(7);
    let grid = f.representable_values();
    (0..N)
        .map(|i| match i % 16 {
            0 => {
                // midpoint of two neighbours: a tie
                let j = (rng.next_u64() as usize) % (grid.len() - 1);
                (grid[j] + grid[j + 1]) * 0.5
            }
            1 => f.min_positive() * rng.uniform(0.0, 4.0),
            2 => f.max_finite() * rng.uniform(1.0, 3.0),
            3 => [0.0, -0.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN][i / 16 % 5],
            _ => rng.normal() * f.max_finite() / 4.0,
        })
        .collect()
}

fn bench_decode(c: &mut Criterion) {
    let mut g = c.benchmark_group("decode");
    g.throughput(Throughput::Elements(N as u64));
    for f in formats() {
        let codes = SplitMix64::new(1).bytes(N);
        let codec = Codec::new(f);
        let mut out = vec![0.0f32; N];
        g.bench_with_input(BenchmarkId::new("lowp", f), &codes, |b, codes| {
            b.iter(|| codec.decode_slice(black_box(codes), &mut out))
        });
        g.bench_with_input(BenchmarkId::new("reference", f), &codes, |b, codes| {
            b.iter(|| {
                for (o, &c) in out.iter_mut().zip(black_box(codes)) {
                    *o = reference::decode(f, c);
                }
            })
        });
    }
    g.finish();
}

fn bench_encode(c: &mut Criterion) {
    let mut g = c.benchmark_group("encode");
    g.throughput(Throughput::Elements(N as u64));
    for f in formats() {
        let xs = inputs(f);
        let codec = Codec::new(f);
        let mut out = vec![0u8; N];
        g.bench_with_input(BenchmarkId::new("lowp", f), &xs, |b, xs| {
            b.iter(|| codec.encode_slice(black_box(xs), &mut out))
        });
        g.bench_with_input(BenchmarkId::new("reference", f), &xs, |b, xs| {
            b.iter(|| {
                for (o, &x) in out.iter_mut().zip(black_box(xs)) {
                    *o = reference::encode(f, x);
                }
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench_decode, bench_encode);
criterion_main!(benches);
