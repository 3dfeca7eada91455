//! blockbloom-redis on a 3-node Redis Cluster on loopback: shards spread over the nodes by
//! their hash tags, answers and bits as a local filter, with and without a password.

mod common;

use blockbloom::BloomFilter;
use blockbloom_redis::RedisBloomFilter;
use blockbloom_workload::url;

/// A 3-node Redis Cluster on loopback (`redis-server --cluster-enabled yes` ×3,
/// `redis-cli --cluster create`): shards spread over the nodes by their hash tags, and the
/// filter answers exactly as a local one.
#[test]
fn three_node_cluster() {
    cluster_answers_as_a_local_filter(None);
}

/// The same on a cluster whose nodes ask for a password (`requirepass`): every node the
/// filter connects to, not only the one in its URL, gets the URL's credentials.
#[test]
fn three_node_cluster_with_a_password() {
    cluster_answers_as_a_local_filter(Some("s3cret"));
}

fn cluster_answers_as_a_local_filter(password: Option<&str>) {
    if !common::available() {
        return;
    }
    let nodes = common::cluster(password);
    let mut f = RedisBloomFilter::builder(&nodes[0].url(), "cl")
        .capacity(50_000)
        .fpr(0.01)
        .seed(77)
        .shard_bytes(1024)
        .cluster()
        .create()
        .unwrap();
    assert!(f.num_shards() > 50);
    let local = BloomFilter::builder()
        .capacity(50_000)
        .fpr(0.01)
        .seed(77)
        .build()
        .unwrap();
    let (stream, _) = blockbloom_workload::dup_stream(40_000, 0.5, 3);
    let keys: Vec<String> = stream.iter().map(|&i| url(i)).collect();
    for chunk in keys.chunks(1000) {
        let remote = f.insert_if_absent_many(chunk).unwrap();
        let mut mine = vec![false; chunk.len()];
        local.insert_if_absent_many(chunk, &mut mine);
        assert_eq!(remote, mine);
    }
    // The shards really are spread: every node holds some.
    for s in &nodes {
        let n: i64 = redis::cmd("DBSIZE").query(&mut s.conn()).unwrap();
        assert!(n > 5, "node {} holds {n} keys", s.port);
    }
    // Another handle opened through another node sees the same filter.
    let mut g = RedisBloomFilter::builder(&nodes[2].url(), "cl")
        .cluster()
        .open()
        .unwrap();
    assert!(g.contains_many(&keys).unwrap().iter().all(|&x| x));
    let back = g.to_local().unwrap();
    let (mut x, mut y) = (Vec::new(), Vec::new());
    back.line_bytes(0, back.num_lines(), &mut x).unwrap();
    local.line_bytes(0, local.num_lines(), &mut y).unwrap();
    assert!(x == y);
    assert!(RedisBloomFilter::builder(&nodes[1].url(), "cl")
        .cluster()
        .open()
        .is_ok());
    // A plain (non-cluster) handle is told MOVED for most shards: an error, never a guess.
    let mut plain = RedisBloomFilter::builder(&nodes[0].url(), "cl").capacity(50_000);
    plain = plain.fpr(0.01);
    if let Ok(mut p) = plain.open() {
        assert!(p.contains_many(&keys).is_err());
    }
    // Deleted from every node, through any of them.
    let delete = || {
        RedisBloomFilter::builder(&nodes[1].url(), "cl")
            .cluster()
            .delete()
    };
    assert!(delete().unwrap());
    for s in &nodes {
        let n: i64 = redis::cmd("DBSIZE").query(&mut s.conn()).unwrap();
        assert_eq!(n, 0, "node {} still holds {n} keys", s.port);
    }
    assert!(!delete().unwrap());
}

/// An expiring filter on the cluster: its generations are created on the node of their
/// shard (the function derives their names from the shard's hash tag), and it answers as
/// its rule (`common/stamps.rs`) at injected times across two windows.
#[test]
fn an_expiring_filter_on_a_cluster_answers_as_its_rule() {
    if !common::available() {
        return;
    }
    use std::time::{Duration, UNIX_EPOCH};
    let nodes = common::cluster(None);
    let day = Duration::from_secs(86_400);
    let mut f = blockbloom_redis::RedisExpiringBloomFilter::builder(&nodes[0].url(), "xc")
        .capacity(20_000)
        .seed(78)
        .expire_after(day)
        .shard_bytes(1024)
        .cluster()
        .create_expiring()
        .unwrap();
    assert!(f.num_shards() > 20);
    let mut local =
        common::stamps::StampModel::new(20_000, 0.01, 78, day, blockbloom::Arrival::Steady);
    let t0 = UNIX_EPOCH + Duration::from_secs(1_600_000_000);
    let (stream, _) = blockbloom_workload::dup_stream(30_000, 0.5, 4);
    let keys: Vec<String> = stream.iter().map(|&i| url(i)).collect();
    for (i, chunk) in keys.chunks(1000).enumerate() {
        let t = t0 + day / 12 * i as u32; // 30 chunks: 2.5 days
        let remote = f.insert_if_absent_many_at(chunk, t).unwrap();
        let mine: Vec<bool> = chunk
            .iter()
            .map(|k| local.insert_if_absent(k.as_str(), t))
            .collect();
        assert!(remote == mine, "chunk {i} differs");
    }
    for s in &nodes {
        let gens: Vec<String> = redis::cmd("KEYS")
            .arg("*.g.*")
            .query(&mut s.conn())
            .unwrap();
        assert!(
            gens.len() > 5,
            "node {} holds {} generations",
            s.port,
            gens.len()
        );
    }
}

/// The tests' own servers: a cluster node whose bus port another process took between
/// `free_port` and its start exits, and is started again on fresh ports rather than waited
/// for (the one way a node of these tests failed to start, under every test binary at once).
#[test]
fn a_node_whose_bus_port_is_taken_starts_on_fresh_ports() {
    if !common::available() {
        return;
    }
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let bus = taken.local_addr().unwrap().port().to_string();
    let args = [
        "--save",
        "",
        "--cluster-enabled",
        "yes",
        "--cluster-port",
        &bus,
    ];
    let node = common::Server::with_args(&args);
    let _: String = redis::cmd("PING").query(&mut node.conn()).unwrap();
}
