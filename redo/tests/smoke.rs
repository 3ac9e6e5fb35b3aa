use redo::*;

#[test]
fn smoke() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = LogConfig::new(dir.path());
    cfg.log_file_size = 1 << 20;
    cfg.log_buffer = 256 << 10;
    cfg.sync_method = SyncMethod::Fdatasync;
    {
        let (log, rec) = RedoLog::open(cfg.clone()).unwrap();
        assert!(rec.transactions.is_empty());
        let mut s = log.session();
        for i in 0..100u32 {
            s.log_change(&i.to_le_bytes()).unwrap();
            let r = s.commit(CommitOptions::DEFAULT).unwrap();
            assert_eq!(r.scn, Scn(i as u64 + 1));
        }
        println!("{:?}", log.stats().get(Stat::RedoWrites));
    }
    let (_log, rec) = RedoLog::open(cfg).unwrap();
    println!("{}", rec.report);
    assert_eq!(rec.transactions.len(), 100);
}
