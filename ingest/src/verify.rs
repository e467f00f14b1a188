//! Checking many commits at once on every core: the CAR read with its block hash checks and
//! the signature verified, which is nearly all of a commit's cost. Results come back in the
//! order of the jobs, so the caller goes on applying them in stream order.

use cid::Cid;

use crate::car::Car;
use crate::commit::{self, CommitError};
use crate::identity::PublicKey;

/// One commit to check.
#[derive(Debug, Clone, Copy)]
pub struct Job<'a> {
    /// The commit's CAR bytes.
    pub blocks: &'a [u8],
    /// The commit block's CID.
    pub root: &'a Cid,
    /// The repository DID.
    pub did: &'a str,
    /// The key the commit must be signed with.
    pub key: &'a PublicKey,
}

/// Why a commit did not check out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckError {
    /// The CAR is malformed or a block does not match its CID.
    #[error("invalid CAR: {0}")]
    Car(String),
    /// The commit is malformed, for another repository, or not signed by the key.
    #[error(transparent)]
    Commit(#[from] CommitError),
}

/// Reads and verifies one commit.
pub fn check(job: &Job<'_>) -> Result<Car, CheckError> {
    let car = Car::read(job.blocks).map_err(|e| CheckError::Car(e.to_string()))?;
    commit::verify_commit(&car, job.root, job.did, job.key)?;
    Ok(car)
}

/// Checks every job, spread over the machine's cores; results in job order.
pub fn check_all(jobs: &[Job<'_>]) -> Vec<Result<Car, CheckError>> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(jobs.len().max(1));
    if threads <= 1 || jobs.len() < 4 {
        return jobs.iter().map(check).collect();
    }
    let per_thread = jobs.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let handles: Vec<_> =
            jobs.chunks(per_thread).map(|chunk| scope.spawn(move || chunk.iter().map(check).collect::<Vec<_>>())).collect();
        handles.into_iter().flat_map(|h| h.join().expect("a verification thread panicked")).collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::Frame;
    use crate::testing::commit_frame;

    #[test]
    fn results_come_back_in_job_order() {
        let secret = k256::ecdsa::SigningKey::from_slice(&[3u8; 32]).unwrap();
        let other = k256::ecdsa::SigningKey::from_slice(&[4u8; 32]).unwrap();
        let key = PublicKey::from_k256(secret.verifying_key());
        let commits: Vec<_> = (0..20)
            .map(|i| {
                let signer = if i % 7 == 3 { &other } else { &secret };
                let Frame::Commit(c) = Frame::decode(&commit_frame(signer, &format!("did:plc:order{i}"), i + 1)).unwrap() else {
                    panic!("not a commit")
                };
                c
            })
            .collect();
        let jobs: Vec<Job<'_>> = commits.iter().map(|c| Job { blocks: &c.blocks, root: &c.commit, did: &c.repo, key: &key }).collect();
        let results = check_all(&jobs);
        for (i, r) in results.iter().enumerate() {
            assert_eq!(r.is_err(), i % 7 == 3, "job {i}: {r:?}");
        }
    }
}
