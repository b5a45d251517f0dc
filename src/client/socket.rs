//! A lean client's socket: a unix socket, TCP (no Nagle delay) or TLS over TCP (rustls),
//! blocking with timeouts while it logs in and when it runs as a `Session`, non-blocking under
//! the event loop (not TLS). A blocking read waits as libmariadb and libpq wait for an
//! answer: a read that does not wait (MSG_DONTWAIT), then poll() until the socket is readable,
//! then the read again. The server feels the difference: a client blocked in read() itself
//! made MariaDB spend 13-16% more CPU per point select than the same client waiting in poll()
//! (bench/server-side.py, both clients' connections at once, server CPU read per thread).

use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

/// TLS over TCP (rustls).
pub type TlsStream = rustls::StreamOwned<rustls::ClientConnection, TcpStream>;

/// A connected socket, and how a read on it waits.
pub struct Stream {
    socket: Socket,
    /// Reads return at once when nothing has arrived (the event loop).
    nonblocking: bool,
    /// How long a blocking read waits for an answer (None: for ever).
    timeout: Option<Duration>,
}

/// The socket itself.
enum Socket {
    /// A unix socket.
    Unix(UnixStream),
    /// TCP.
    Tcp(TcpStream),
    /// TLS over TCP; blocking only (one thread per connection).
    Tls(Box<TlsStream>),
}

impl Stream {
    fn of(socket: Socket, timeout: Duration) -> io::Result<Stream> {
        let mut s = Stream {
            socket,
            nonblocking: false,
            timeout: None,
        };
        s.set_timeouts(Some(timeout))?;
        Ok(s)
    }

    /// Connect to a unix socket.
    pub fn unix(path: &Path, timeout: Duration) -> io::Result<Stream> {
        Stream::of(Socket::Unix(UnixStream::connect(path)?), timeout)
    }

    /// Connect over TCP to the first address of `host:port` that answers within `timeout`.
    pub fn tcp(host: &str, port: u16, timeout: Duration) -> io::Result<Stream> {
        let mut last = io::Error::new(io::ErrorKind::NotFound, format!("no address for {host}"));
        for addr in (host, port).to_socket_addrs()? {
            match TcpStream::connect_timeout(&addr, timeout) {
                Ok(s) => {
                    s.set_nodelay(true)?;
                    return Stream::of(Socket::Tcp(s), timeout);
                }
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    /// Read and write timeouts (None: wait for ever).
    pub fn set_timeouts(&mut self, t: Option<Duration>) -> io::Result<()> {
        self.timeout = t;
        match &self.socket {
            Socket::Unix(s) => {
                s.set_read_timeout(t)?;
                s.set_write_timeout(t)
            }
            Socket::Tcp(s) => {
                s.set_read_timeout(t)?;
                s.set_write_timeout(t)
            }
            Socket::Tls(s) => {
                s.sock.set_read_timeout(t)?;
                s.sock.set_write_timeout(t)
            }
        }
    }

    /// Switch to non-blocking reads and writes (the event loop; not over TLS, whose
    /// buffered records epoll cannot see).
    pub fn set_nonblocking(&mut self, on: bool) -> io::Result<()> {
        match &self.socket {
            Socket::Unix(s) => s.set_nonblocking(on)?,
            Socket::Tcp(s) => s.set_nonblocking(on)?,
            Socket::Tls(_) => {
                return Err(io::Error::new(
                    io::ErrorKind::Unsupported,
                    "TLS connections run blocking",
                ));
            }
        }
        self.nonblocking = on;
        Ok(())
    }

    /// Encrypted: runs one thread per connection.
    pub fn is_tls(&self) -> bool {
        matches!(self.socket, Socket::Tls(_))
    }

    /// Wrap this TCP connection in TLS for `name` and finish the handshake.
    pub fn into_tls(
        self,
        config: std::sync::Arc<rustls::ClientConfig>,
        name: rustls::pki_types::ServerName<'static>,
    ) -> io::Result<Stream> {
        let Socket::Tcp(tcp) = self.socket else {
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
        Ok(Stream {
            socket: Socket::Tls(Box::new(s)),
            ..self
        })
    }
}

impl AsRawFd for Stream {
    fn as_raw_fd(&self) -> RawFd {
        match &self.socket {
            Socket::Unix(s) => s.as_raw_fd(),
            Socket::Tcp(s) => s.as_raw_fd(),
            Socket::Tls(s) => s.sock.as_raw_fd(),
        }
    }
}

/// Read what has arrived without waiting; when nothing has, wait in poll() for at most the
/// socket's read timeout (None: for ever), then read. The connectors' way (libmariadb's
/// pvio_socket_read, libpq's pqReadData after pqWait).
fn read_polled(fd: RawFd, buf: &mut [u8], timeout: Option<Duration>) -> io::Result<usize> {
    loop {
        // SAFETY: buf is valid for writes of its length.
        let n = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), libc::MSG_DONTWAIT) };
        if n >= 0 {
            return Ok(n as usize);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::WouldBlock {
            return Err(e);
        }
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = timeout.map_or(-1, |t| t.as_millis().clamp(1, i32::MAX as u128) as i32);
        // SAFETY: one valid pollfd.
        match unsafe { libc::poll(&mut p, 1, ms) } {
            0 => return Err(io::Error::new(io::ErrorKind::TimedOut, "no answer in time")),
            r if r < 0 => {
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
            _ => {}
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match &mut self.socket {
            Socket::Unix(s) if self.nonblocking => s.read(buf),
            Socket::Tcp(s) if self.nonblocking => s.read(buf),
            Socket::Unix(s) => read_polled(s.as_raw_fd(), buf, self.timeout),
            Socket::Tcp(s) => read_polled(s.as_raw_fd(), buf, self.timeout),
            Socket::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.socket {
            Socket::Unix(s) => s.write(buf),
            Socket::Tcp(s) => s.write(buf),
            Socket::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.socket {
            Socket::Tls(s) => s.flush(),
            _ => Ok(()),
        }
    }
}
