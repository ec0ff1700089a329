//! Independent per-instance work spread over the machine's cores, results in input order.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

pub fn map<T: Sync, R: Send>(items: &[T], work: impl Fn(&T) -> R + Sync) -> Vec<R> {
    map_with(std::thread::available_parallelism().map_or(1, |n| n.get()), items, work)
}

/// [`map`] with at most `workers` items at a time: for work that mostly waits (on the engine, a
/// health command), where the machine's cores are not the bound.
pub fn map_with<T: Sync, R: Send>(workers: usize, items: &[T], work: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let workers = workers.min(items.len());
    if workers <= 1 {
        return items.iter().map(work).collect();
    }
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<R>>> = Mutex::new((0..items.len()).map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| loop {
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
}
