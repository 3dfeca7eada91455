"""RedisBloomFilter from Python, on a redis-server of its own."""

import os

import pytest

from blockbloom import RedisBloomFilter, RedisError


def urls(a, b):
    return [f"https://example.net/{i}" for i in range(a, b)]


def test_shared_filter_and_local_front(redis_url):
    a = RedisBloomFilter(redis_url, "crawl:seen", 100_000, 0.01)
    # The local front's rate is set far below 1/5000: at its default (0.1%, a random seed) one
    # of these 5000 new keys was a local false positive, answered without a round trip, in 8
    # of 4,000 seeds tried, and the count below came one short.
    b = RedisBloomFilter(redis_url, "crawl:seen", 100_000, 0.01, local_front=10_000, local_fpr=1e-9)
    keys = urls(0, 5000)
    won_a = a.insert_if_absent_many(keys)
    won_b = [b.insert_if_absent(k) for k in keys]
    assert sum(won_a) > 4_950 and not any(won_b)
    assert b.round_trips == 5000
    assert not any(b.insert_if_absent(k) for k in keys)
    assert b.round_trips == 5000  # repeats answered in-process
    assert all(a.contains_many(keys)) and keys[0] in a
    # The repr names the filter, not the URL (which may carry a password).
    assert repr(a) == "RedisBloomFilter(name='crawl:seen', capacity=100000, fpr=0.01)"
    assert (a.name, a.capacity, a.target_fpr) == ("crawl:seen", 100_000, 0.01)
    # add and update, as every other class has them (one round trip for update).
    a.add("added")
    b.update(u for u in ["updated", b"bytes"])
    assert a.contains_many(["added", "updated", "bytes", "never"]) == [True, True, True, False]
    with pytest.raises(TypeError):
        a.update(["fine", 5])  # a bad key: nothing sent
    assert "fine" not in a
    with pytest.raises(RedisError):
        RedisBloomFilter(redis_url, "crawl:seen", 200_000, 0.01)  # other parameters
    assert RedisBloomFilter.delete(redis_url, "crawl:seen")


def test_estimates_of_the_shared_filter(redis_url):
    """The new keys the shared filter took for repeats, counted, against its estimate; its
    keys and rate against a local copy's (the same bits)."""
    f = RedisBloomFilter(redis_url, "est", 100_000, 0.01, local_front=None)
    assert f.estimated_false_positives() == 0.0 and f.estimated_len() == 0
    lost = 0
    for a in range(0, 150_000, 5_000):  # 1.5 times the capacity: a rate past 1%, more to count
        lost += f.insert_if_absent_many(urls(a, a + 5_000)).count(False)
    estimate, local = f.estimated_false_positives(), f.to_local()
    print(f"\n150000 URLs, capacity 100000 at 1%: {lost} taken for repeats, estimated {estimate:.1f}")
    assert 0.7 * lost <= estimate <= 1.3 * lost
    assert f.estimated_len() == local.estimated_len()
    assert abs(f.estimated_fpr() / local.estimated_fpr() - 1) < 0.05


def test_connection_refused_is_a_connection_error():
    with pytest.raises(ConnectionError):
        RedisBloomFilter("redis://127.0.0.1:1/", "x", 1000)


def test_threads_can_share_one_object(redis_url):
    # One connection per object: threads take turns on it (each call releases the GIL
    # while it waits for Redis) instead of failing with "Already borrowed".
    import threading

    f = RedisBloomFilter(redis_url, "shared", 1_000_000, 1e-6, local_front=100_000)
    keys = urls(0, 3000)
    won = [[] for _ in range(4)]

    def offer(i):
        won[i] = [k for k in keys if f.insert_if_absent(k)]

    threads = [threading.Thread(target=offer, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(k for w in won for k in w) == sorted(keys)
    assert f.round_trips <= 4 * 3000


def test_a_restart_between_calls_is_not_an_error(redis_server):
    # The restart closes the filter's connection; the next call's first step changes
    # nothing (a read), so it is sent again on a new connection instead of failing.
    f = RedisBloomFilter(redis_server.url, "restarted", 100_000, 0.01)
    keys = urls(0, 1000)
    assert all(f.insert_if_absent_many(keys))
    redis_server.restart()
    assert not f.insert_if_absent(keys[0])
    redis_server.restart()
    assert all(f.contains_many(keys))
    redis_server.restart()
    assert f.insert_if_absent("https://example.net/new")


def test_a_server_down_is_a_connection_error_until_it_is_back(redis_server):
    f = RedisBloomFilter(redis_server.url, "down", 100_000, 0.01)
    assert f.insert_if_absent("a")
    redis_server.kill()
    for _ in range(2):
        with pytest.raises(ConnectionError):
            f.insert_if_absent("b")
    redis_server.start()
    assert not f.insert_if_absent("a")
    assert f.insert_if_absent("b")


def test_backup_with_to_local_and_restore_with_export(tmp_path):
    """An operator's backup of the shared filter: to_local() and save; the server restarted
    empty (no persistence); the saved copy exported back, every key answered as before.
    A copy of a filter that lost a shard is StateLost, not a copy with a gap; a worker's
    filter made with the seed merges in with union_from, one with another seed does not."""
    import subprocess

    from blockbloom import BloomFilter, StateLost

    from conftest import RedisServer

    server = RedisServer(tmp_path / "redis")
    try:
        f = RedisBloomFilter(server.url, "crawl", 50_000, 0.01, shard_bytes=4096)
        keys = urls(0, 20_000)
        f.insert_if_absent_many(keys)
        backup = f.to_local()
        assert isinstance(backup, BloomFilter) and all(backup.contains_many(keys))
        backup.save(tmp_path / "backup.bloom")
        server.restart()  # empty: nothing persisted
        saved = BloomFilter.load(tmp_path / "backup.bloom")
        restored = RedisBloomFilter.export(server.url, "crawl", saved, shard_bytes=4096)  # as f
        assert not any(restored.insert_if_absent_many(keys))
        with pytest.raises(StateLost):  # f learns of the loss once...
            f.insert_if_absent_many(keys)
        assert not any(f.insert_if_absent_many(keys))  # ...and then sees the restored keys
        subprocess.run(["redis-cli", "-u", server.url, "DEL", "{crawl.2}.bits"], check=True, capture_output=True)
        with pytest.raises(StateLost):
            f.to_local()
        assert sum(f.to_local().contains_many(keys)) < len(keys)  # the shard's keys are gone
        worker = BloomFilter(50_000, 0.01, seed=backup.seed)
        worker.update(urls(50_000, 51_000))
        f.union_from(worker)
        assert all(f.contains_many(urls(50_000, 51_000)))
        with pytest.raises(RedisError):
            f.union_from(BloomFilter(50_000, 0.01))  # another seed
        with pytest.raises(RedisError):
            RedisBloomFilter.export(server.url, "small", BloomFilter(50_000, 0.01, block_bits=64))
    finally:
        server.kill()


def test_wait_for_replicas(tmp_path):
    from conftest import RedisServer

    primary = RedisServer(tmp_path / "primary")
    replica = RedisServer(tmp_path / "replica", args=["--replicaof", "127.0.0.1", str(primary.port)])
    try:
        f = RedisBloomFilter(primary.url, "replicated", 100_000, 0.01)
        keys = urls(0, 5000)
        assert all(f.insert_if_absent_many(keys))
        assert f.wait_for_replicas(1, 10.0) == 1
        assert f.wait_for_replicas(2, 0.2) == 1  # there is only one
        with pytest.raises(ValueError):
            f.wait_for_replicas(1, -1.0)
        # Every acknowledged key is on the replica (read there through the library).
        r = RedisBloomFilter(replica.url, "replicated", 100_000, 0.01)
        assert all(r.contains_many(keys))
    finally:
        replica.kill()
        primary.kill()


def test_a_server_that_does_not_answer_times_out():
    """A listener that accepts and never replies (a hung server): the call fails after
    `timeout` with a ConnectionError instead of hanging."""
    import socket
    import threading

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    accepted = []
    threading.Thread(target=lambda: accepted.append(listener.accept()), daemon=True).start()
    url = f"redis://127.0.0.1:{listener.getsockname()[1]}/"
    with pytest.raises(ConnectionError):
        RedisBloomFilter(url, "hung", 1000, timeout=0.2)
    assert accepted, "the client never connected"
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError):
            RedisBloomFilter(url, "hung", 1000, timeout=bad)
    listener.close()


TLS_CLIENT = """
import sys
from blockbloom import RedisBloomFilter
f = RedisBloomFilter(sys.argv[1], "tls", 100_000, 0.01)
print(f.insert_if_absent("a"), f.insert_if_absent("a"), "b" in f)
"""


def test_rediss_urls_verify_the_server(tmp_path):
    """``rediss://``: TLS, the server's certificate verified against the system's trusted
    certificates or ``SSL_CERT_FILE`` (each run in a process of its own, whose environment
    that is); a server signed by an unknown CA is a RedisError, never a silent plain or
    unverified connection."""
    import subprocess
    import sys

    from conftest import RedisServer, free_port, make_tls_certificates

    tls = make_tls_certificates(tmp_path / "tls")
    port = free_port()
    args = ["--tls-port", str(port), "--tls-cert-file", tls["cert"], "--tls-key-file", tls["key"]]
    server = RedisServer(tmp_path / "redis", args=[*args, "--tls-ca-cert-file", tls["ca"], "--tls-auth-clients", "no"])
    try:

        def client(url, cert_file):
            env = dict(os.environ, SSL_CERT_FILE=cert_file)
            return subprocess.run([sys.executable, "-c", TLS_CLIENT, url], env=env, capture_output=True, text=True)

        ok = client(f"rediss://localhost:{port}/", tls["ca"])
        assert ok.returncode == 0, ok.stderr
        assert ok.stdout.split() == ["True", "False", "False"]
        # The same filter over plain TCP.
        assert "a" in RedisBloomFilter(server.url, "tls", 100_000, 0.01)
        untrusted = client(f"rediss://localhost:{port}/", tls["key"])  # no certificate in it
        assert untrusted.returncode != 0
        assert "RedisError" in untrusted.stderr and "certificate" in untrusted.stderr, untrusted.stderr
    finally:
        server.kill()


def test_a_redis_cluster(tmp_path):
    """``cluster=True``: the shards spread over a 3-node Redis Cluster, answers as on one
    server, the flag travels with a pickled filter, and ``delete`` clears every node."""
    import pickle
    import subprocess
    import time

    from conftest import RedisServer

    from conftest import free_port

    # The bus on a free port of its own: the default, port + 10000, is past 65535 for a
    # quarter of the ephemeral ports.
    args = ["--cluster-enabled", "yes", "--cluster-node-timeout", "3000"]
    nodes = [RedisServer(tmp_path / f"n{i}", args=[*args, "--cluster-port", str(free_port())]) for i in range(3)]

    def cli(node, *args):
        return subprocess.run(["redis-cli", "-p", str(node.port), *args], check=True, capture_output=True, text=True).stdout

    try:
        addrs = [f"127.0.0.1:{n.port}" for n in nodes]
        subprocess.run(["redis-cli", "--cluster", "create", *addrs, "--cluster-replicas", "0", "--cluster-yes"], check=True, capture_output=True)
        deadline = time.time() + 30
        while not all("cluster_state:ok" in cli(n, "CLUSTER", "INFO") for n in nodes):
            assert time.time() < deadline, "the cluster did not converge"
            time.sleep(0.1)
        f = RedisBloomFilter(nodes[0].url, "crawl", 50_000, 0.01, cluster=True, shard_bytes=1024)
        keys = urls(0, 5000)
        assert sum(f.insert_if_absent_many(keys)) > 4950
        assert not any(f.insert_if_absent(k) for k in keys[:100])
        g = pickle.loads(pickle.dumps(f))
        assert all(g.contains_many(keys))
        assert all(int(cli(n, "DBSIZE")) > 0 for n in nodes), "every node holds shards"
        assert RedisBloomFilter.delete(nodes[2].url, "crawl", cluster=True)
        assert [int(cli(n, "DBSIZE")) for n in nodes] == [0, 0, 0]
        assert not RedisBloomFilter.delete(nodes[1].url, "crawl", cluster=True)
    finally:
        for n in nodes:
            n.kill()
