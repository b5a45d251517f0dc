//! A lean client's socket: a unix socket, TCP (no Nagle delay) or TLS over TCP (rustls),
//! blocking with timeouts while it logs in and when it runs as a `Session`, non-blocking under
//! the event loop (not TLS).

use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

/// TLS over TCP (rustls).
pub type TlsStream = rustls::StreamOwned<rustls::ClientConnection, TcpStream>;

/// A connected socket.
pub enum Stream {
    /// A unix socket.
    Unix(UnixStream),
    /// TCP.
    Tcp(TcpStream),
    /// TLS over TCP; blocking only (one thread per connection).
    Tls(Box<TlsStream>),
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
            Stream::Tls(s) => {
                s.sock.set_read_timeout(t)?;
                s.sock.set_write_timeout(t)
            }
        }
    }

    /// Switch to non-blocking reads and writes (the event loop; not over TLS, whose
    /// buffered records epoll cannot see).
    pub fn set_nonblocking(&self, on: bool) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.set_nonblocking(on),
            Stream::Tcp(s) => s.set_nonblocking(on),
            Stream::Tls(_) => Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "TLS connections run blocking",
            )),
        }
    }

    /// Encrypted: runs one thread per connection.
    pub fn is_tls(&self) -> bool {
        matches!(self, Stream::Tls(_))
    }

    /// Wrap this TCP connection in TLS for `name` and finish the handshake.
    pub fn into_tls(
        self,
        config: std::sync::Arc<rustls::ClientConfig>,
        name: rustls::pki_types::ServerName<'static>,
    ) -> io::Result<Stream> {
        let Stream::Tcp(tcp) = self else {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "TLS is for TCP connections",
            ));
        };
        let conn = rustls::ClientConnection::new(config, name).map_err(io::Error::other)?;
        let mut s = rustls::StreamOwned::new(conn, tcp);
        while s.conn.is_handshaking() {
            s.conn.complete_io(&mut s.sock)?;
        }
        Ok(Stream::Tls(Box::new(s)))
    }
}

impl AsRawFd for Stream {
    fn as_raw_fd(&self) -> RawFd {
        match self {
            Stream::Unix(s) => s.as_raw_fd(),
            Stream::Tcp(s) => s.as_raw_fd(),
            Stream::Tls(s) => s.sock.as_raw_fd(),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.read(buf),
            Stream::Tcp(s) => s.read(buf),
            Stream::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.write(buf),
            Stream::Tcp(s) => s.write(buf),
            Stream::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Tls(s) => s.flush(),
            _ => Ok(()),
        }
    }
}
