//! The cost of verifying a signed frame, next to decoding the same frame unsigned.
//!
//! `cargo bench -p nexus-core --features signing --bench signing`.

// criterion_group!/criterion_main! generate undocumented functions.
#![allow(missing_docs)]
use criterion::{criterion_group, criterion_main, Criterion};
use nexus_core::frame::signing::{Signer, SigningClock, SigningKey, Verifier, VerifyPolicy};
use nexus_core::frame::{Decoder, Encoder, MAX_FRAME_LEN};
use nexus_core::{mav, Instant};
use std::hint::black_box;

fn bench(c: &mut Criterion) {
    let key = SigningKey::new([9; 32]);
    let msg = mav::ATTITUDE_DATA::default();
    let mut buf = [0u8; MAX_FRAME_LEN];
    let n = Encoder::new(1, 1).encode(&msg, &mut buf).unwrap();
    let unsigned = buf[..n].to_vec();
    let mut signer = Signer::new(key.clone(), 0, SigningClock { base: 1 << 40 });
    let m = signer.sign(Instant::ZERO, &mut buf, n).unwrap();
    let signed = buf[..m].to_vec();
    let mut g = c.benchmark_group("signing");
    g.bench_function("decode_unsigned", |b| {
        let mut d = Decoder::new();
        b.iter(|| black_box(d.feed(black_box(&unsigned)).1.is_some()))
    });
    g.bench_function("decode_and_verify_signed", |b| {
        let mut d = Decoder::new();
        // Optional policy: the signature is checked every time (a replay is rejected after the
        // hash, so each iteration pays the full verification).
        let mut v: Verifier<16> = Verifier::new(key.clone(), VerifyPolicy::OPTIONAL);
        b.iter(|| {
            let (_, f) = d.feed(black_box(&signed));
            black_box(v.check(&f.unwrap(), 1 << 40))
        })
    });
    g.bench_function("sign", |b| {
        b.iter(|| {
            let mut out = [0u8; MAX_FRAME_LEN];
            out[..n].copy_from_slice(&unsigned);
            black_box(signer.sign(Instant::ZERO, &mut out, n).unwrap())
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
