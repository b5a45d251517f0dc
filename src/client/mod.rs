//! The client connection, in one room: what a workload needs of a connection ([`connection`]:
//! the `Session` trait, its errors and values), the lean client's core ([`lean`]: an engine's
//! `Protocol` run over a socket with one buffer each way, blocking or recorded ahead for the
//! event loop) and its socket ([`socket`]: unix or TCP, TLS), and what a worker dials
//! ([`dial`]: a lean connection the event loop can drive, or a driver's that only blocks).
//! Each engine keeps only its protocol and its driver (`server::<engine>::wire`, `driver`);
//! the two ways of running clients (a thread per connection, the event loop) are `load`'s.

pub mod connection;
pub mod dial;
pub mod lean;
pub mod mode;
pub mod socket;
