//! Input: `files` (or standard input) read on a thread of its own, handed over in chunks
//! that end on a line boundary, so that reading and deciding overlap.

use std::io::{self, Read};
use std::path::PathBuf;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};

/// Bytes read per chunk (more where a line is longer).
const CHUNK: usize = 1 << 20;

/// A chunk of input: `buf[..len]` is whole lines, each ending with `\n`.
pub(crate) struct Chunk {
    pub(crate) buf: Vec<u8>,
    len: usize,
}

impl Chunk {
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

/// Reads `files` (or stdin) on a separate thread and hands over chunks that end on a line
/// boundary; a last line without newline gets one. Reading and hashing thus overlap. The
/// main thread hands used buffers back through `free`, so that steady state allocates and
/// zeroes nothing (a fresh megabyte per chunk cost page faults and clearing).
pub(crate) fn spawn_reader(
    files: Vec<PathBuf>,
) -> (Receiver<Result<Chunk, String>>, SyncSender<Vec<u8>>) {
    let (tx, rx) = sync_channel::<Result<Chunk, String>>(4);
    let (free_tx, free_rx) = sync_channel::<Vec<u8>>(8);
    std::thread::spawn(move || {
        let inputs: Vec<Option<PathBuf>> = if files.is_empty() {
            vec![None]
        } else {
            files
                .into_iter()
                .map(|f| (f.as_os_str() != "-").then_some(f))
                .collect()
        };
        let fresh = || free_rx.try_recv().unwrap_or_else(|_| vec![0u8; CHUNK]);
        for input in inputs {
            let name = input
                .as_ref()
                .map_or("standard input".to_string(), |p| p.display().to_string());
            let mut reader: Box<dyn Read> = match &input {
                None => Box::new(io::stdin().lock()),
                Some(p) => match std::fs::File::open(p) {
                    Ok(f) => Box::new(f),
                    Err(e) => {
                        let _ = tx.send(Err(format!("{name}: {e}")));
                        return;
                    }
                },
            };
            // `buf[..filled]` holds input not handed over yet (the start of a line at most).
            let (mut buf, mut filled) = (fresh(), 0usize);
            loop {
                if filled == buf.len() {
                    buf.resize(buf.len() * 2, 0); // a line longer than the buffer
                }
                let n = match reader.read(&mut buf[filled..]) {
                    Ok(n) => n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        let _ = tx.send(Err(format!("{name}: {e}")));
                        return;
                    }
                };
                if n == 0 {
                    if filled > 0 {
                        if filled == buf.len() {
                            buf.push(0);
                        }
                        buf[filled] = b'\n';
                        let chunk = Chunk {
                            buf,
                            len: filled + 1,
                        };
                        if tx.send(Ok(chunk)).is_err() {
                            return;
                        }
                    }
                    break;
                }
                let start = filled;
                filled += n;
                if let Some(last_nl) = memchr::memrchr(b'\n', &buf[start..filled]) {
                    let end = start + last_nl + 1;
                    let mut next = fresh();
                    let rest = filled - end;
                    if next.len() < rest.max(CHUNK) {
                        next.resize(rest.max(CHUNK), 0);
                    }
                    next[..rest].copy_from_slice(&buf[end..filled]);
                    let chunk = Chunk { buf, len: end };
                    if tx.send(Ok(chunk)).is_err() {
                        return;
                    }
                    (buf, filled) = (next, rest);
                }
            }
        }
    });
    (rx, free_tx)
}
