//! The UI with its sampler thread: the thread reads a new view every refresh at the depth the
//! UI's current mode needs, and the UI draws them.

use std::sync::mpsc;
use std::time::Duration;

use hood_monitor::{scan_needs, ScanOptions, Source};

use crate::{run, Actions, TuiConfig, TuiError};

/// Run the UI with views from `source`, read on a thread of their own every `cfg.delay`
/// (sooner after a mode change, which is seen within 50 ms), until `q`. Confirmed `k` and
/// `n` keys go to `actions`.
pub fn run_sampled<S: Source>(
    cfg: TuiConfig,
    mut source: S,
    actions: &mut dyn Actions,
) -> Result<(), TuiError> {
    let (frame_tx, frame_rx) = mpsc::channel();
    let (need_tx, need_rx) = mpsc::channel::<ScanOptions>();
    let delay = cfg.delay;
    let mut scan = scan_needs(cfg.mode, cfg.sort, cfg.irq_time);
    let sampler = std::thread::spawn(move || -> Result<(), S::Error> {
        loop {
            // Sleep in small steps so a new request (mode change) or quit is seen quickly.
            let mut slept = Duration::ZERO;
            let mut changed = false;
            while slept < delay && !changed {
                let step = Duration::from_millis(50).min(delay - slept);
                std::thread::sleep(step);
                slept += step;
                loop {
                    match need_rx.try_recv() {
                        Ok(s) => {
                            changed = s != scan;
                            scan = s;
                        }
                        Err(mpsc::TryRecvError::Empty) => break,
                        Err(mpsc::TryRecvError::Disconnected) => return Ok(()),
                    }
                }
            }
            if changed {
                // Rates need two snapshots of the same depth: take a short second one.
                source.restart(&scan)?;
                std::thread::sleep(Duration::from_millis(200));
            }
            if frame_tx.send(source.next(&scan)?).is_err() {
                return Ok(());
            }
        }
    });
    let res = run(cfg, frame_rx, need_tx, actions);
    let sampled = sampler.join();
    res?;
    match sampled {
        Ok(r) => r.map_err(|e| TuiError::Source(Box::new(e))),
        Err(_) => Err(TuiError::SamplerPanicked),
    }
}
