//! Where a one-file reload spends its time, in process, without the
//! watcher's debounce: `cargo run --release --example reload_steps -- DIR
//! FILE [EDITS]`. Builds DIR as `sezzlee serve` does (`Gateway::load`),
//! then EDITS times sets a new summary on FILE's first operation (written
//! to a temporary file renamed over it, as editors save) and times
//! `Reloader::rescan` until the new catalog is swapped in (the figure) and
//! until it returns. The reload log (`catalog reloaded` and its steps) goes
//! to `reload_steps.log` in the temporary folder.

use serde_json::Value;
use sezzlee_gateway::gateway::Gateway;
use sezzlee_gateway::reload::{Outcome, Reloader};
use sezzlee_gateway::settings::{DemoBackend, Settings, WatchMode};
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[path = "../benches/support/edit.rs"]
mod edit;
use edit::edit_first_operation;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = PathBuf::from(args.next().expect("usage: reload_steps DIR FILE [EDITS]"));
    let file = dir.join(args.next().expect("usage: reload_steps DIR FILE [EDITS]"));
    let edits: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(5);
    let log_path = std::env::temp_dir().join("reload_steps.log");
    let log = std::fs::File::create(&log_path).expect("a log file");
    tracing_subscriber::fmt()
        .with_writer(std::sync::Mutex::new(log))
        .with_ansi(false)
        .init();

    let settings = Settings {
        catalogs: dir.clone(),
        watch: WatchMode::Off,
        demo_backend: DemoBackend::Off,
        ..Settings::default()
    };
    let started = Instant::now();
    let (gateway, sources) = Gateway::load(settings).expect("the folder is readable");
    let served = gateway.store.current();
    eprintln!(
        "cold: {} tools, {} diagnostics, {:.0} ms; log in {}",
        served.catalog.tools().len(),
        served.catalog.diagnostics.len(),
        ms(started.elapsed()),
        log_path.display()
    );
    drop(served);
    let reloader = Reloader::new(gateway.clone(), sources);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let mut document: Value =
        serde_json::from_slice(&std::fs::read(&file).expect("FILE is readable"))
            .expect("FILE is JSON");
    let mut swapped = Vec::new();
    for round in 0..edits {
        edit_first_operation(&mut document, &format!("edited {round}"));
        let temporary = file.with_extension("tmp");
        std::fs::write(&temporary, serde_json::to_vec(&document).expect("JSON")).expect("write");
        std::fs::rename(&temporary, &file).expect("rename");
        let mut generation = gateway.store.subscribe();
        let before = *generation.borrow_and_update();
        let started = Instant::now();
        let (outcome, at_swap, returned) = runtime.block_on(async {
            let watching = async {
                let _ = generation.changed().await;
                started.elapsed()
            };
            let (at_swap, outcome) = tokio::join!(watching, reloader.rescan());
            (outcome, at_swap, started.elapsed())
        });
        assert_eq!(
            outcome,
            Outcome::Bumped(before + 1),
            "the edit is observable"
        );
        swapped.push(ms(at_swap));
        eprintln!(
            "edit {round}: swapped {:.1} ms, rescan returned {:.1} ms",
            ms(at_swap),
            ms(returned)
        );
        // Quiet between edits: what the reload left to free is freed.
        std::thread::sleep(Duration::from_millis(500));
    }
    swapped.sort_by(f64::total_cmp);
    eprintln!(
        "swapped: p50 {:.1} ms, max {:.1} ms",
        swapped[swapped.len() / 2],
        swapped.last().copied().unwrap_or(f64::NAN)
    );
}
