//! A lean client's socket: a unix socket or TCP (no Nagle delay), blocking with timeouts while
//! it logs in and when it runs as a `Session`, non-blocking under the event loop.

use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

/// A connected socket.
pub enum Stream {
    /// A unix socket.
    Unix(UnixStream),
    /// TCP.
    Tcp(TcpStream),
}

impl Stream {
    /// Connect to a unix socket.
    pub fn unix(path: &Path, timeout: Duration) -> io::Result<Stream> {
        let s = UnixStream::connect(path)?;
        let s = Stream::Unix(s);
        s.set_timeouts(Some(timeout))?;
        Ok(s)
    }

    /// Connect over TCP to the first address of `host:port` that answers within `timeout`.
    pub fn tcp(host: &str, port: u16, timeout: Duration) -> io::Result<Stream> {
        let mut last = io::Error::new(io::ErrorKind::NotFound, format!("no address for {host}"));
        for addr in (host, port).to_socket_addrs()? {
            match TcpStream::connect_timeout(&addr, timeout) {
                Ok(s) => {
                    s.set_nodelay(true)?;
                    let s = Stream::Tcp(s);
                    s.set_timeouts(Some(timeout))?;
                    return Ok(s);
                }
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    /// Read and write timeouts (None: wait for ever).
    pub fn set_timeouts(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Unix(s) => {
                s.set_read_timeout(t)?;
                s.set_write_timeout(t)
            }
            Stream::Tcp(s) => {
                s.set_read_timeout(t)?;
                s.set_write_timeout(t)
            }
        }
    }

    /// Switch to non-blocking reads and writes (the event loop).
    pub fn set_nonblocking(&self, on: bool) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.set_nonblocking(on),
            Stream::Tcp(s) => s.set_nonblocking(on),
        }
    }
}

impl AsRawFd for Stream {
    fn as_raw_fd(&self) -> RawFd {
        match self {
            Stream::Unix(s) => s.as_raw_fd(),
            Stream::Tcp(s) => s.as_raw_fd(),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.read(buf),
            Stream::Tcp(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.write(buf),
            Stream::Tcp(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
