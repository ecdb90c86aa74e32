//! The threads connections are served on: one single-threaded tokio
//! runtime per thread, each connection on one of them for its whole life,
//! as nginx runs one event loop per worker.
//!
//! Why not the one work-stealing runtime: a call through the gateway is a
//! chain of small hand-offs (the caller's connection task, the backend
//! connection's task, the timers, the answer). On a work-stealing runtime
//! each wake may land on another worker, and an idle worker is woken to
//! steal it, so one call costs several cross-thread wake-ups; with one
//! caller that was most of invoke_tool's overhead over nginx
//! (`benches/http_load.rs`, (g) and (j)). Here a connection, its
//! requests and the backend connections they use (the backend client keeps
//! a pool per serving thread, [`current`]) share one thread and wake no
//! other.
//!
//! Everything that is not a connection (the accept loop, reloads, key
//! refreshes, shutdown) stays on the runtime that called `serve`; with no
//! serving threads (`serve_threads = 0`) connections are served there too.
//! Dropping [`ServingThreads`] stops the threads and drops what they still
//! run.

use std::cell::Cell;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::runtime::Handle;
use tokio::sync::oneshot;

thread_local! {
    /// The index of the serving thread this is, if it is one.
    static INDEX: Cell<Option<usize>> = const { Cell::new(None) };
}

/// The index of the serving thread the caller runs on, or `None` off them
/// (a test's runtime, the accept loop): the backend client chooses its
/// connection pool by it.
pub fn current() -> Option<usize> {
    INDEX.with(Cell::get)
}

/// Running serving threads; connections are given to them in turn.
pub struct ServingThreads {
    threads: Vec<ServingThread>,
    next: AtomicUsize,
}

/// One serving thread: its runtime's handle, and the sender whose drop
/// ends it.
struct ServingThread {
    handle: Handle,
    _stop: oneshot::Sender<()>,
}

impl ServingThreads {
    /// Starts `count` serving threads; with none, [`Self::spawn`] runs
    /// its work on the runtime it is called from.
    pub fn start(count: usize) -> std::io::Result<ServingThreads> {
        let threads = (0..count)
            .map(start_thread)
            .collect::<std::io::Result<Vec<_>>>()?;
        Ok(ServingThreads {
            threads,
            next: AtomicUsize::new(0),
        })
    }

    /// The runtimes of the serving threads (none with no threads).
    pub fn handles(&self) -> impl Iterator<Item = &Handle> {
        self.threads.iter().map(|thread| &thread.handle)
    }

    /// Runs `future` on the next serving thread in turn (with none, on the
    /// calling runtime).
    pub fn spawn<F>(&self, future: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let turn = self.next.fetch_add(1, Ordering::Relaxed);
        match self
            .threads
            .get(turn.checked_rem(self.threads.len()).unwrap_or(0))
        {
            Some(thread) => drop(thread.handle.spawn(future)),
            None => drop(tokio::spawn(future)),
        }
    }
}

/// Starts serving thread `index`: a single-threaded runtime that runs what
/// it is given until its stop sender is dropped, then drops it.
fn start_thread(index: usize) -> std::io::Result<ServingThread> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let handle = runtime.handle().clone();
    let (stop, stopped) = oneshot::channel::<()>();
    std::thread::Builder::new()
        .name(format!("sezzlee-serve-{index}"))
        .spawn(move || {
            INDEX.with(|slot| slot.set(Some(index)));
            let _ = runtime.block_on(stopped);
        })?;
    Ok(ServingThread {
        handle,
        _stop: stop,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn work_is_given_to_the_threads_in_turn_and_knows_its_thread() {
        let threads = ServingThreads::start(2).expect("threads start");
        let (seen, saw) = mpsc::channel();
        for _ in 0..4 {
            let seen = seen.clone();
            threads.spawn(async move {
                let _ = seen.send(current());
            });
        }
        let mut indexes: Vec<_> = (0..4)
            .map(|_| saw.recv_timeout(std::time::Duration::from_secs(5)))
            .collect::<Result<_, _>>()
            .expect("every task ran");
        indexes.sort();
        assert_eq!(indexes, [Some(0), Some(0), Some(1), Some(1)]);
        assert_eq!(current(), None, "the test's own thread serves nothing");
    }

    #[test]
    fn dropping_them_drops_what_they_still_run() {
        let threads = ServingThreads::start(1).expect("threads start");
        let (held, released) = oneshot::channel::<()>();
        threads.spawn(async move {
            let _held = held;
            std::future::pending::<()>().await;
        });
        drop(threads);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let dropped = runtime.block_on(async {
            tokio::time::timeout(std::time::Duration::from_secs(5), released).await
        });
        assert!(
            matches!(dropped, Ok(Err(_))),
            "the pending task was dropped with its thread"
        );
    }
}
