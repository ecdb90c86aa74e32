//! `sezzlee health`: asks a running gateway's `/healthz` on this machine
//! and exits 0 when it answers 200, else 1.
//!
//! Container images run it as their `HEALTHCHECK` (a final image needs no
//! shell or curl). It reads the same `SEZZLEE_LISTEN` as `serve`, and asks
//! the loopback address when the gateway listens on every interface.

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream};
use std::process::ExitCode;
use std::time::Duration;

/// The address to ask for a gateway listening on `listen`.
pub fn probe_address(listen: &str) -> Result<SocketAddr, String> {
    let mut address: SocketAddr = listen
        .parse()
        .map_err(|_| format!("'{listen}' is not an address such as 0.0.0.0:8080"))?;
    match address.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => address.set_ip(Ipv4Addr::LOCALHOST.into()),
        IpAddr::V6(ip) if ip.is_unspecified() => address.set_ip(Ipv6Addr::LOCALHOST.into()),
        _ => {}
    }
    Ok(address)
}

/// `GET {path}` on `address`: whether it answered 200 within `timeout`.
pub fn check(address: SocketAddr, path: &str, timeout: Duration) -> Result<(), String> {
    let mut stream = TcpStream::connect_timeout(&address, timeout)
        .map_err(|e| format!("cannot connect to {address}: {e}"))?;
    stream
        .set_read_timeout(Some(timeout))
        .and_then(|()| stream.set_write_timeout(Some(timeout)))
        .map_err(|e| e.to_string())?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n"
    )
    .map_err(|e| format!("cannot send to {address}: {e}"))?;
    let mut head = [0u8; 64];
    let read = stream
        .read(&mut head)
        .map_err(|e| format!("no answer from {address}: {e}"))?;
    let status_line = String::from_utf8_lossy(&head[..read]);
    if status_line.starts_with("HTTP/1.1 200") || status_line.starts_with("HTTP/1.0 200") {
        Ok(())
    } else {
        let first = status_line.lines().next().unwrap_or_default().to_string();
        Err(format!("{address}{path} answered '{first}'"))
    }
}

pub fn run(listen: &str, path: &str, timeout: Duration) -> ExitCode {
    let result = probe_address(listen).and_then(|address| check(address, path, timeout));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(why) => {
            eprintln!("sezzlee health: {why}");
            ExitCode::from(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_interface_is_asked_on_loopback() {
        assert_eq!(
            probe_address("0.0.0.0:8080").unwrap(),
            "127.0.0.1:8080".parse().unwrap()
        );
        assert_eq!(
            probe_address("[::]:9000").unwrap(),
            "[::1]:9000".parse().unwrap()
        );
        assert_eq!(
            probe_address("10.1.2.3:80").unwrap(),
            "10.1.2.3:80".parse().unwrap()
        );
        assert!(probe_address("localhost").is_err());
    }
}
