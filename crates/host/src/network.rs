//! Which of this machine's addresses the other ranks of a data-parallel job can reach.
//!
//! Gloo advertises one address per rank to the others. PyTorch's default is the address the
//! host name resolves to, which is 127.0.0.1 on Debian's default `/etc/hosts` and in many
//! container images: a rank on another machine then connects to its own loopback and is
//! refused. `GLOO_SOCKET_IFNAME` names the interface (PyTorch honours it in Python only);
//! without it cnnbench takes the address this machine sends from towards `MASTER_ADDR`,
//! the kernel's route to it, which is the one a remote rank 0 can answer.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs, UdpSocket};

/// The variable PyTorch's Python reads for Gloo's interfaces (comma-separated).
pub const GLOO_SOCKET_IFNAME: &str = "GLOO_SOCKET_IFNAME";

/// How a rank chose the address it advertises.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AddressChoice {
    /// `GLOO_SOCKET_IFNAME` named these interfaces; Gloo binds each.
    Interfaces(Vec<String>),
    /// The address routed towards the rendezvous host.
    RouteTo(String),
}

/// The endpoint a rank advertises: its address, the interface that holds it, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LocalEndpoint {
    pub address: IpAddr,
    /// The interface holding `address`, where the system says (`None` otherwise).
    pub interface: Option<String>,
    pub choice: AddressChoice,
}

impl LocalEndpoint {
    /// "GLOO_SOCKET_IFNAME=eth1" or "route to 10.0.0.1", for results and messages.
    pub fn how(&self) -> String {
        match &self.choice {
            AddressChoice::Interfaces(names) => format!("{GLOO_SOCKET_IFNAME}={}", names.join(",")),
            AddressChoice::RouteTo(host) => format!("route to {host}"),
        }
    }
}

/// The interfaces `GLOO_SOCKET_IFNAME` names in `value` (commas separate them; blanks are
/// ignored); `None` when it names none.
pub fn interfaces_named(value: Option<&str>) -> Option<Vec<String>> {
    let names: Vec<String> = value?
        .split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .collect();
    (!names.is_empty()).then_some(names)
}

/// The address this rank advertises to reach `master_addr:master_port`: on the first
/// interface `gloo_socket_ifname` names (its IPv4 address, else IPv6), else the source
/// address of the kernel's route to the rendezvous host (no packet is sent).
pub fn local_endpoint(
    master_addr: &str,
    master_port: u16,
    gloo_socket_ifname: Option<&str>,
) -> Result<LocalEndpoint, String> {
    if let Some(names) = interfaces_named(gloo_socket_ifname) {
        let first = &names[0];
        let address = interface_address(first)?;
        return Ok(LocalEndpoint {
            address,
            interface: Some(first.clone()),
            choice: AddressChoice::Interfaces(names),
        });
    }
    let target = resolve(master_addr, master_port)?;
    let unspecified: SocketAddr = match target {
        SocketAddr::V4(_) => ([0, 0, 0, 0], 0).into(),
        SocketAddr::V6(_) => (std::net::Ipv6Addr::UNSPECIFIED, 0).into(),
    };
    let route = || -> std::io::Result<IpAddr> {
        let socket = UdpSocket::bind(unspecified)?;
        socket.connect(target)?;
        Ok(socket.local_addr()?.ip())
    };
    let address = route().map_err(|e| {
        format!(
            "no route from this machine to the rendezvous host {master_addr} ({}): {e}; set {GLOO_SOCKET_IFNAME} to the interface that reaches it",
            target.ip()
        )
    })?;
    Ok(LocalEndpoint {
        address,
        interface: interface_holding(address),
        choice: AddressChoice::RouteTo(master_addr.to_string()),
    })
}

/// The first address `host` resolves to, preferring IPv4 as Gloo's TCP transport does.
fn resolve(host: &str, port: u16) -> Result<SocketAddr, String> {
    let all: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve the rendezvous host {host}: {e}"))?
        .collect();
    all.iter()
        .find(|a| a.is_ipv4())
        .or(all.first())
        .copied()
        .ok_or_else(|| format!("the rendezvous host {host} resolves to no address"))
}

/// Whether `master_addr` is a name that resolves to a loopback address here although it
/// does not say so ("localhost", "127.0.0.1" and "::1" do): ranks on other machines
/// cannot reach rank 0 through it. The warning, or `None`.
pub fn loopback_warning(master_addr: &str, master_port: u16, world_size: usize) -> Option<String> {
    let literal_loopback = master_addr.eq_ignore_ascii_case("localhost")
        || master_addr
            .parse::<IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    if world_size < 2 || literal_loopback {
        return None;
    }
    let target = resolve(master_addr, master_port).ok()?;
    target.ip().is_loopback().then(|| {
        format!(
            "MASTER_ADDR={master_addr} resolves to {} here, a loopback address: ranks on other machines cannot reach rank 0 there (fine if every rank runs on this machine); set MASTER_ADDR to an address they can reach",
            target.ip()
        )
    })
}

/// The address of interface `name`: its first IPv4 address, else its first IPv6 one.
pub fn interface_address(name: &str) -> Result<IpAddr, String> {
    let addrs = addresses().map_err(|e| format!("cannot list this machine's interfaces: {e}"))?;
    let of_name: Vec<IpAddr> = addrs
        .iter()
        .filter(|(n, _)| n == name)
        .map(|(_, a)| *a)
        .collect();
    if let Some(a) = of_name.iter().find(|a| a.is_ipv4()).or(of_name.first()) {
        return Ok(*a);
    }
    let mut known: Vec<&str> = addrs.iter().map(|(n, _)| n.as_str()).collect();
    known.dedup();
    Err(format!(
        "{GLOO_SOCKET_IFNAME} names the interface {name:?}, which has no IP address on this machine (interfaces with one: {})",
        known.join(", ")
    ))
}

/// The interface holding `address`, where the system lists it.
pub fn interface_holding(address: IpAddr) -> Option<String> {
    addresses()
        .ok()?
        .into_iter()
        .find(|(_, a)| *a == address)
        .map(|(n, _)| n)
}

/// Every (interface, IP address) pair of this machine, in the system's order.
fn addresses() -> Result<Vec<(String, IpAddr)>, String> {
    let list = nix::ifaddrs::getifaddrs().map_err(|e| e.to_string())?;
    Ok(list
        .filter_map(|ifa| {
            let address = ifa.address?;
            let ip = if let Some(v4) = address.as_sockaddr_in() {
                IpAddr::V4(v4.ip())
            } else {
                IpAddr::V6(address.as_sockaddr_in6()?.ip())
            };
            Some((ifa.interface_name, ip))
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_route_to_loopback_leaves_from_loopback() {
        let e = local_endpoint("127.0.0.1", 29500, None).unwrap();
        assert!(e.address.is_loopback(), "{e:?}");
        assert_eq!(e.choice, AddressChoice::RouteTo("127.0.0.1".into()));
        assert_eq!(e.how(), "route to 127.0.0.1");
        // Every Linux machine names its loopback interface.
        assert_eq!(e.interface.as_deref(), Some("lo"));
    }

    #[test]
    fn a_named_interface_gives_its_address_and_an_unknown_one_is_named() {
        let e = local_endpoint("10.255.255.1", 29500, Some(" lo, ")).unwrap();
        assert_eq!(e.address, IpAddr::from([127, 0, 0, 1]));
        assert_eq!(e.interface.as_deref(), Some("lo"));
        assert_eq!(e.how(), "GLOO_SOCKET_IFNAME=lo");
        let err = local_endpoint("127.0.0.1", 29500, Some("nosuch0")).unwrap_err();
        assert!(err.contains("\"nosuch0\"") && err.contains("lo"), "{err}");
    }

    #[test]
    fn blank_interface_lists_name_none() {
        assert_eq!(interfaces_named(None), None);
        assert_eq!(interfaces_named(Some(" , ")), None);
        assert_eq!(
            interfaces_named(Some("eth0,eth1")),
            Some(vec!["eth0".to_string(), "eth1".to_string()])
        );
    }

    #[test]
    fn an_unresolvable_host_is_named() {
        let err = local_endpoint("no-such-host.invalid", 29500, None).unwrap_err();
        assert!(err.contains("no-such-host.invalid"), "{err}");
    }

    #[test]
    fn only_a_name_that_hides_loopback_is_warned_about() {
        assert_eq!(loopback_warning("127.0.0.1", 29500, 2), None);
        assert_eq!(loopback_warning("localhost", 29500, 2), None);
        // This machine's own name hides loopback where /etc/hosts maps it there (Debian's
        // default, and this project's CI machines), and is warned about exactly then.
        let name = crate::host_name().expect("a host name");
        let hides = resolve(&name, 29500).is_ok_and(|a| a.ip().is_loopback());
        let warning = loopback_warning(&name, 29500, 2);
        assert_eq!(warning.is_some(), hides, "{name}: {warning:?}");
        if let Some(w) = warning {
            assert!(w.contains("loopback") && w.contains(&name), "{w}");
        }
        assert_eq!(loopback_warning(&name, 29500, 1), None);
    }
}
