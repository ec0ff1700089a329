//! Independent per-instance work spread over the machine's cores, results in input order.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

pub fn map<T: Sync, R: Send>(items: &[T], work: impl Fn(&T) -> R + Sync) -> Vec<R> {
    map_with(std::thread::available_parallelism().map_or(1, |n| n.get()), items, work)
}

std::thread_local! {
    /// Set in a worker of a map: a map inside one (a session's disk walk inside the map over the
    /// sessions) runs on the worker's own thread. The outer map has the cores busy already, and
    /// threads spawned per inner item cost more than they bring (thousands of spawns over a fleet).
    static IN_WORKER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// [`map`] with at most `workers` items at a time: for work that mostly waits (on the engine, a
/// health command), where the machine's cores are not the bound.
pub fn map_with<T: Sync, R: Send>(workers: usize, items: &[T], work: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let workers = workers.min(items.len());
    if workers <= 1 || IN_WORKER.with(std::cell::Cell::get) {
        return items.iter().map(work).collect();
    }
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<R>>> = Mutex::new((0..items.len()).map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| loop {
                IN_WORKER.with(|in_worker| in_worker.set(true));
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(item) = items.get(i) else { break };
                let result = work(item);
                results.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(result);
            });
        }
    });
    results
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .map(|r| r.expect("every item was processed"))
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn keeps_input_order() {
        let items: Vec<u32> = (0..100).collect();
        assert_eq!(super::map(&items, |n| n * 2), items.iter().map(|n| n * 2).collect::<Vec<_>>());
        assert_eq!(super::map_with(3, &items, |n| n + 1), items.iter().map(|n| n + 1).collect::<Vec<_>>());
    }

    #[test]
    fn a_map_inside_a_worker_runs_on_that_worker() {
        let outer: Vec<u32> = (0..8).collect();
        let threads = super::map_with(2, &outer, |_| {
            let inner: Vec<u32> = (0..4).collect();
            let here = std::thread::current().id();
            super::map_with(4, &inner, |_| std::thread::current().id() == here).into_iter().all(|same| same)
        });
        assert!(threads.into_iter().all(|same| same), "every inner item ran on its outer worker's thread");
        let here = std::thread::current().id();
        let spread = super::map_with(2, &outer, |_| std::thread::current().id() != here);
        assert!(spread.into_iter().all(|other| other), "an outer map still spreads");
    }
}
