//! The perf record decoder and the profile builder take untrusted bytes: random and mutated
//! input must never panic, and well-formed records must decode to what was encoded.

use hood_raw::attr::{sample, Attr};
use hood_raw::records::{kind, Decoded, Event};
use proptest::prelude::*;

fn attr() -> Attr {
    Attr {
        type_: 1,
        config: 0,
        sample_period_or_freq: 999,
        sample_type: sample::IDENTIFIER
            | sample::IP
            | sample::TID
            | sample::TIME
            | sample::CPU
            | sample::PERIOD
            | sample::CALLCHAIN,
        read_format: 0,
        flags: (1 << 18) | (1 << 10),
        sample_regs_user: 0,
        branch_sample_type: 0,
    }
}

fn sample_record(pid: u32, ip: u64, time: u64, chain: &[u64]) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&7u64.to_le_bytes()); // identifier
    body.extend_from_slice(&ip.to_le_bytes());
    body.extend_from_slice(&pid.to_le_bytes());
    body.extend_from_slice(&pid.to_le_bytes());
    body.extend_from_slice(&time.to_le_bytes());
    body.extend_from_slice(&1u32.to_le_bytes()); // cpu
    body.extend_from_slice(&0u32.to_le_bytes());
    body.extend_from_slice(&1000u64.to_le_bytes()); // period
    body.extend_from_slice(&(chain.len() as u64).to_le_bytes());
    for a in chain {
        body.extend_from_slice(&a.to_le_bytes());
    }
    let mut rec = Vec::new();
    rec.extend_from_slice(&kind::SAMPLE.to_le_bytes());
    rec.extend_from_slice(&2u16.to_le_bytes()); // user mode
    rec.extend_from_slice(&((body.len() + 8) as u16).to_le_bytes());
    rec.extend_from_slice(&body);
    rec
}

#[test]
fn well_formed_samples_decode_exactly() {
    let mut d = Decoded::default();
    let mut bytes = sample_record(42, 0x1000, 5, &[0x1000, 0x2000]);
    bytes.extend(sample_record(43, 0x3000, 3, &[]));
    d.push_chunk(&attr(), 0, &bytes);
    d.sort();
    assert_eq!(d.malformed, 0);
    assert_eq!(d.events.len(), 2);
    assert_eq!(d.events[0].time, 3);
    match &d.events[1].event {
        Event::Sample {
            pid,
            ip,
            cpu,
            period,
            chain,
            ..
        } => {
            assert_eq!((*pid, *ip, *cpu, *period), (42, 0x1000, 1, 1000));
            assert_eq!(
                &d.chains[chain.0 as usize..chain.1 as usize],
                &[0x1000, 0x2000]
            );
        }
        e => panic!("{e:?}"),
    }
}

#[test]
fn a_cut_record_is_counted_not_trusted() {
    let mut d = Decoded::default();
    let bytes = sample_record(42, 0x1000, 5, &[1, 2, 3]);
    d.push_chunk(&attr(), 0, &bytes[..bytes.len() - 3]);
    assert_eq!(d.events.len(), 0);
    assert_eq!(d.malformed, 1);
}

proptest! {
    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        let mut d = Decoded::default();
        d.push_chunk(&attr(), 0, &bytes);
        for e in &d.events {
            if let Event::Sample { chain, .. } = &e.event {
                prop_assert!(chain.1 as usize <= d.chains.len());
            }
        }
    }

    #[test]
    fn mutated_records_never_panic(edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..6)) {
        let mut bytes = sample_record(1, 2, 3, &[4, 5, 6]);
        bytes.extend(sample_record(7, 8, 9, &[]));
        for (at, v) in edits {
            let n = bytes.len();
            bytes[at % n] = v;
        }
        let mut d = Decoded::default();
        d.push_chunk(&attr(), 0, &bytes);
    }
}
