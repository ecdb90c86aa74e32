//! Shutdown as one type: begun once, by `Gateway::begin_shutdown`, and
//! seen by everything that must end with it (listen streams, the reload
//! loop, the identity provider's key refresher, requests that arrive
//! late). It was a raw `watch` channel of `bool` that each place read its
//! own way (`borrow`, `changed`, `wait_for`), where a `changed` also fires
//! when nothing changed but the sender went away.

use tokio::sync::watch;

/// The gateway's side: begins shutdown, and hands out signals.
#[derive(Debug)]
pub struct Shutdown {
    begun: watch::Sender<bool>,
}

/// One task's view of shutdown.
#[derive(Debug, Clone)]
pub struct ShutdownSignal {
    begun: watch::Receiver<bool>,
}

impl Default for Shutdown {
    fn default() -> Self {
        Shutdown::new()
    }
}

impl Shutdown {
    pub fn new() -> Shutdown {
        Shutdown {
            begun: watch::channel(false).0,
        }
    }

    /// Begins shutdown (again: nothing more happens).
    pub fn begin(&self) {
        self.begun.send_replace(true);
    }

    /// Whether shutdown has begun.
    pub fn has_begun(&self) -> bool {
        *self.begun.borrow()
    }

    /// A signal for one task.
    pub fn signal(&self) -> ShutdownSignal {
        ShutdownSignal {
            begun: self.begun.subscribe(),
        }
    }
}

impl ShutdownSignal {
    /// Whether shutdown has begun.
    pub fn has_begun(&self) -> bool {
        *self.begun.borrow()
    }

    /// Returns once shutdown has begun (at once if it has), or once the
    /// gateway that would begin it is gone.
    pub async fn begun(&mut self) {
        let _ = self.begun.wait_for(|begun| *begun).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_signal_sees_shutdown_begun_before_or_after_it_was_made() {
        let shutdown = Shutdown::new();
        let mut early = shutdown.signal();
        assert!(!early.has_begun() && !shutdown.has_begun());
        let waiting = tokio::spawn(async move {
            early.begun().await;
            early.has_begun()
        });
        shutdown.begin();
        assert!(waiting.await.unwrap());
        let mut late = shutdown.signal();
        late.begun().await;
        assert!(late.has_begun() && shutdown.has_begun());
    }

    #[tokio::test]
    async fn a_signal_returns_when_the_gateway_is_gone() {
        let shutdown = Shutdown::new();
        let mut signal = shutdown.signal();
        drop(shutdown);
        signal.begun().await;
        assert!(!signal.has_begun());
    }
}
