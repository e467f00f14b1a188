//! A CAR file (as `getRepo` and `getRecord` answer): reading with per-block hash checks, then
//! the Merkle search tree walked whole and searched for one key. Errors, never panics.
#![no_main]

use ingest::car::Car;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(car) = Car::read(data) else { return };
    for root in car.roots.clone() {
        let _ = ingest::backfill::walk_mst(&car, &root);
        let _ = ingest::fetch::mst_find(&car, &root, "pub.svc.eprint.submission/3k2a");
    }
});
