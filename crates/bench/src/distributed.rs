//! Data-parallel runs: every rank runs the harness on its own batch; rank 0 collects the
//! other ranks' samples into its result, which is the one the job writes.

use crate::result::{BenchResult, RankRecord};
use anyhow::{anyhow, Context, Result};
use cnnbench_engine::distributed::ProcessGroup;

/// Sends this rank's samples to rank 0 and, on rank 0, returns its result with every
/// rank's samples in `distributed.ranks`; the other ranks get `None`. Every rank calls
/// it once per result, in the same order (`key` names the result).
pub fn gather_ranks(
    group: &dyn ProcessGroup,
    key: &str,
    result: BenchResult,
) -> Result<Option<BenchResult>> {
    let own = result
        .distributed
        .as_ref()
        .and_then(|d| d.ranks.first())
        .ok_or_else(|| anyhow!("the result of a data-parallel run has no samples of its rank"))?;
    let bytes = serde_json::to_vec(own)?;
    let Some(all) = group.gather_to_root(key, &bytes)? else {
        return Ok(None);
    };
    let ranks = all
        .iter()
        .enumerate()
        .map(|(rank, bytes)| {
            serde_json::from_slice::<RankRecord>(bytes)
                .with_context(|| format!("reading rank {rank}'s samples"))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Some(merge(result, ranks)?))
}

/// Rank 0's result with every rank's samples; checks each rank ran the same passes.
pub fn merge(mut result: BenchResult, ranks: Vec<RankRecord>) -> Result<BenchResult> {
    let passes = result.samples.values().next().map_or(0, Vec::len);
    for (i, r) in ranks.iter().enumerate() {
        if r.rank != i {
            return Err(anyhow!("rank {i}'s samples came labelled rank {}", r.rank));
        }
        let quantities: Vec<_> = r.samples.keys().collect();
        if quantities != result.samples.keys().collect::<Vec<_>>()
            || r.samples.values().any(|v| v.len() != passes)
        {
            return Err(anyhow!(
                "rank {i} timed other phases or another number of passes than rank 0 ({passes}): every rank must run the same passes"
            ));
        }
    }
    let record = result
        .distributed
        .as_mut()
        .ok_or_else(|| anyhow!("not the result of a data-parallel run"))?;
    record.ranks = ranks;
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::DistributedRecord;
    use crate::Quantity;
    use cnnbench_engine::distributed::GroupInfo;
    use std::collections::BTreeMap;
    use std::sync::Mutex;

    /// A result as the harness returns it on `rank`.
    fn result_of(rank: usize, passes: usize) -> BenchResult {
        let text = include_str!("../../report/tests/fixtures/ours/base/resnet18.json");
        let mut r: BenchResult = serde_json::from_str(text).unwrap();
        let samples: BTreeMap<Quantity, Vec<f64>> = [Quantity::Forward, Quantity::Total]
            .into_iter()
            .map(|q| (q, vec![0.1 * (rank + 1) as f64; passes]))
            .collect();
        r.samples = samples.clone();
        r.distributed = Some(DistributedRecord {
            backend: "gloo".into(),
            transport: "tcp".into(),
            bucket_bytes: 1,
            overlap: false,
            ranks: vec![RankRecord {
                rank,
                host: Some(format!("host-{rank}")),
                address: Some(format!("10.231.0.{}", rank + 1)),
                interface: Some(format!("veth{rank}")),
                address_chosen_by: Some("route to 10.231.0.1".into()),
                samples,
            }],
        });
        r
    }

    /// A two-rank group whose "network" is a shared map: rank 1 must publish first.
    struct FakeGroup {
        rank: usize,
        board: std::sync::Arc<Mutex<BTreeMap<String, Vec<u8>>>>,
    }
    impl ProcessGroup for FakeGroup {
        fn info(&self) -> GroupInfo {
            GroupInfo {
                rank: self.rank,
                world_size: 2,
                backend: "fake".into(),
                transport: "memory".into(),
                bucket_bytes: 1,
                host: None,
                endpoint: None,
            }
        }
        fn gather_to_root(&self, key: &str, value: &[u8]) -> Result<Option<Vec<Vec<u8>>>> {
            let mut board = self.board.lock().unwrap();
            if self.rank != 0 {
                board.insert(format!("{key}/{}", self.rank), value.to_vec());
                return Ok(None);
            }
            let other = board.get(&format!("{key}/1")).cloned().unwrap();
            Ok(Some(vec![value.to_vec(), other]))
        }
        fn barrier(&self) -> Result<()> {
            Ok(())
        }
        fn announce_failure(&self, _message: &str) {}
    }

    #[test]
    fn rank_zero_collects_every_ranks_samples() {
        let board = std::sync::Arc::new(Mutex::new(BTreeMap::new()));
        let g = |rank| FakeGroup {
            rank,
            board: board.clone(),
        };
        assert_eq!(gather_ranks(&g(1), "k", result_of(1, 3)).unwrap(), None);
        let merged = gather_ranks(&g(0), "k", result_of(0, 3)).unwrap().unwrap();
        let ranks = &merged.distributed.as_ref().unwrap().ranks;
        assert_eq!(ranks.len(), 2);
        assert_eq!(ranks[1].rank, 1);
        assert_eq!(ranks[1].samples[&Quantity::Total], vec![0.2; 3]);
        // Each rank's machine and address travel with its samples.
        assert_eq!(ranks[1].host.as_deref(), Some("host-1"));
        assert_eq!(ranks[1].interface.as_deref(), Some("veth1"));
        assert_eq!(ranks[0].address.as_deref(), Some("10.231.0.1"));
        // Rank 0's own samples stay the result's.
        assert_eq!(merged.samples[&Quantity::Total], vec![0.1; 3]);
    }

    #[test]
    fn ranks_that_ran_different_passes_are_refused() {
        let other = result_of(1, 2).distributed.unwrap().ranks.remove(0);
        let own = result_of(0, 3).distributed.unwrap().ranks.remove(0);
        let e = merge(result_of(0, 3), vec![own, other]).unwrap_err();
        assert!(e.to_string().contains("rank 1"), "{e}");
    }
}
