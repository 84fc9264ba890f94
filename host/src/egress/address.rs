//! Which addresses are "the public internet", and a DNS resolver that refuses the others.
//!
//! The resolver is what makes the check hold: the HTTP client connects to exactly the addresses
//! it returns, so there is no window between checking a name and connecting to it (DNS
//! rebinding), and no per-request client is needed to pin an address. IP literals never reach a
//! resolver; [`super::send`] checks those itself with [`is_private`].

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// The cloud metadata services' addresses, refused on every egress path whatever the grant
/// (local networks and CHATD_ALLOW_PRIVATE_NETWORKS included); only an operator's configured
/// base URL reaches one ([`is_metadata`], `docs/configuration.md` lists them):
/// - 169.254.169.254: AWS, Azure, Google Cloud, Oracle, DigitalOcean, OpenStack…;
/// - 169.254.170.2: AWS ECS's task metadata and credentials;
/// - 100.100.100.200: Alibaba Cloud;
/// - 192.0.0.192: Oracle Cloud's classic metadata;
/// - fd00:ec2::254: AWS over IPv6.
pub const METADATA_V4: [Ipv4Addr; 4] = [
    Ipv4Addr::new(169, 254, 169, 254),
    Ipv4Addr::new(169, 254, 170, 2),
    Ipv4Addr::new(100, 100, 100, 200),
    Ipv4Addr::new(192, 0, 0, 192),
];
/// The IPv6 metadata address ([`METADATA_V4`] says whose).
pub const METADATA_V6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0254);

/// Whether `ip` is a cloud metadata address ([`METADATA_V4`], [`METADATA_V6`]), in any spelling
/// that carries one: IPv4, or IPv6 mapped, compatible, NAT64 or 6to4.
pub fn is_metadata(ip: IpAddr) -> bool {
    let v4 = match ip {
        IpAddr::V4(v4) => Some(v4),
        IpAddr::V6(v6) if v6 == METADATA_V6 => return true,
        IpAddr::V6(v6) => embedded_v4(v6),
    };
    v4.is_some_and(|v4| METADATA_V4.contains(&v4))
}

/// Loopback, private, link-local (cloud metadata lives there), shared, unspecified, multicast,
/// broadcast, documentation and reserved addresses: everything that is not the public internet.
/// IPv6 forms that carry an IPv4 address (mapped, compatible, NAT64, 6to4) are judged by it.
pub fn is_private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_private_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = embedded_v4(v6) {
                return is_private_v4(v4);
            }
            let s = v6.segments();
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00 // unique local, fd00:ec2::254 metadata included
                || (s[0] & 0xffc0) == 0xfe80 // link-local
                || (s[0] & 0xffc0) == 0xfec0 // site-local (deprecated, still routed on some LANs)
                || (s[0] == 0x2001 && s[1] == 0x0db8) // documentation
                || (s[0] == 0x0064 && s[1] == 0xff9b && s[2] == 0x0001) // local-use NAT64, 64:ff9b:1::/48
                || (s[0] == 0x0100 && s[1] == 0 && s[2] == 0 && s[3] == 0) // discard-only, 100::/64
        }
    }
}

/// The IPv4 address an IPv6 address stands for, where it stands for one: mapped
/// (`::ffff:a.b.c.d`), compatible (`::a.b.c.d`, deprecated), NAT64 (`64:ff9b::a.b.c.d`) and 6to4
/// (`2002:AABB:CCDD::`).
fn embedded_v4(v6: Ipv6Addr) -> Option<Ipv4Addr> {
    if let Some(v4) = v6.to_ipv4_mapped() {
        return Some(v4);
    }
    let s = v6.segments();
    let o = v6.octets();
    let tail = Ipv4Addr::new(o[12], o[13], o[14], o[15]);
    if s[..6] == [0, 0, 0, 0, 0, 0] && !v6.is_loopback() && !v6.is_unspecified() {
        return Some(tail); // IPv4-compatible
    }
    if s[..6] == [0x0064, 0xff9b, 0, 0, 0, 0] {
        return Some(tail); // NAT64 well-known prefix
    }
    if s[0] == 0x2002 {
        return Some(Ipv4Addr::new(o[2], o[3], o[4], o[5])); // 6to4
    }
    None
}

fn is_private_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || a == 0
        || (a == 100 && (64..128).contains(&b)) // shared address space (CGNAT)
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments
        || (a == 198 && (b == 18 || b == 19)) // benchmarking
        || a >= 240 // reserved
}

/// Whether `ip` is reachable on a local network: loopback, or a private or shared range (RFC
/// 1918, unique local, CGNAT). Not link-local or a cloud metadata address (100.100.100.200 is
/// inside the shared range, fd00:ec2::254 inside the unique local one), not unspecified,
/// multicast, broadcast or reserved: those are never what an operator means by "my network".
pub fn is_local(ip: IpAddr) -> bool {
    if is_metadata(ip) {
        return false;
    }
    let v4 = match ip {
        IpAddr::V4(v4) => Some(v4),
        IpAddr::V6(v6) => embedded_v4(v6),
    };
    if let Some(v4) = v4 {
        let [a, b, ..] = v4.octets();
        return v4.is_loopback() || v4.is_private() || (a == 100 && (64..128).contains(&b));
    }
    let IpAddr::V6(v6) = ip else { return false };
    v6.is_loopback() || (v6.segments()[0] & 0xfe00) == 0xfc00
}

/// A name that resolved to an address outside the public internet. The HTTP layer finds it in
/// the client's error chain and reports a denial, not a connection failure.
#[derive(Debug)]
pub struct PrivateAddress {
    pub host: String,
    pub ip: IpAddr,
}

impl std::fmt::Display for PrivateAddress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if is_metadata(self.ip) {
            return write!(
                f,
                "{} resolves to {}, a cloud metadata address, which chatd never reaches",
                self.host, self.ip
            );
        }
        write!(
            f,
            "{} resolves to {}, a loopback, private, link-local or metadata address",
            self.host, self.ip
        )
    }
}

impl std::error::Error for PrivateAddress {}

/// Resolves with the system resolver and refuses the whole answer when any address in it is
/// private (an answer mixing public and private addresses is how rebinding attacks start).
#[derive(Debug, Default)]
pub struct PublicOnly;

impl Resolve for PublicOnly {
    fn resolve(&self, name: Name) -> Resolving {
        resolve_refusing(name, is_private)
    }
}

/// Resolves with the system resolver and refuses the whole answer when any address in it is
/// neither public nor [`is_local`]: the resolver for a grant's `local_network`, where a
/// loopback or private address is expected but link-local (cloud metadata) never is.
#[derive(Debug, Default)]
pub struct PublicOrLocal;

impl Resolve for PublicOrLocal {
    fn resolve(&self, name: Name) -> Resolving {
        resolve_refusing(name, |ip| is_private(ip) && !is_local(ip))
    }
}

/// Resolves with the system resolver and refuses the whole answer when any address in it is a
/// cloud metadata address: the resolver for a grant that may reach private networks
/// (CHATD_ALLOW_PRIVATE_NETWORKS), and for `chatd plugins install`.
#[derive(Debug, Default)]
pub struct NotMetadata;

impl Resolve for NotMetadata {
    fn resolve(&self, name: Name) -> Resolving {
        resolve_refusing(name, is_metadata)
    }
}

/// `name`'s addresses, unless `refused` says so of any of them.
fn resolve_refusing(name: Name, refused: fn(IpAddr) -> bool) -> Resolving {
    Box::pin(async move {
        let host = name.as_str().to_string();
        let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
        if let Some(bad) = addrs.iter().find(|a| refused(a.ip())) {
            return Err(Box::new(PrivateAddress { host, ip: bad.ip() }) as _);
        }
        Ok(Box::new(addrs.into_iter()) as Addrs)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_addresses_are_recognised() {
        for ip in [
            "127.0.0.1",
            "10.0.0.1",
            "172.16.5.4",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "255.255.255.255",
            "224.0.0.1",
            "::1",
            "::",
            "fe80::1",
            "fec0::1",
            "fd00:ec2::254",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "::127.0.0.1",
            "::10.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "64:ff9b::a00:1",
            "64:ff9b::7f00:1",
            "64:ff9b:1::1.2.3.4",
            "2002:a00:1::",
            "2002:7f00:1::1",
            "2001:db8::1",
            "100::1",
        ] {
            assert!(is_private(ip.parse().unwrap()), "{ip}");
        }
        for ip in [
            "93.184.216.34",
            "8.8.8.8",
            "1.1.1.1",
            "2606:4700:4700::1111",
            "172.32.0.1",
            "100.128.0.1",
            "64:ff9b::808:808",
            "2002:808:808::1",
        ] {
            assert!(!is_private(ip.parse().unwrap()), "{ip}");
        }
    }

    #[test]
    fn local_addresses_are_loopback_and_private_ranges_never_metadata() {
        for ip in [
            "127.0.0.1",
            "10.0.0.1",
            "172.16.5.4",
            "192.168.1.1",
            "100.64.0.1",
            "::1",
            "fd12::1",
            "::ffff:10.0.0.1",
        ] {
            assert!(is_local(ip.parse().unwrap()), "{ip}");
        }
        for ip in [
            "169.254.169.254",
            "0.0.0.0",
            "255.255.255.255",
            "224.0.0.1",
            "::",
            "fe80::1",
            "fd00:ec2::254",
            "::ffff:169.254.169.254",
            "64:ff9b::a9fe:a9fe",
            "2001:db8::1",
            "240.0.0.1",
        ] {
            assert!(!is_local(ip.parse().unwrap()), "{ip}");
        }
    }

    #[test]
    fn metadata_addresses_are_recognised_in_every_spelling_and_never_local() {
        for ip in [
            "169.254.169.254",
            "169.254.170.2",
            "100.100.100.200",
            "192.0.0.192",
            "fd00:ec2::254",
            "::ffff:169.254.169.254",
            "::ffff:100.100.100.200",
            "::100.100.100.200",
            "::ffff:192.0.0.192",
            "::169.254.170.2",
            "64:ff9b::6464:64c8",
            "2002:6464:64c8::1",
        ] {
            let ip: IpAddr = ip.parse().unwrap();
            assert!(is_metadata(ip), "{ip}");
            assert!(!is_local(ip), "{ip}");
            assert!(is_private(ip), "{ip}");
        }
        for ip in [
            "100.100.100.201",
            "169.254.169.253",
            "10.0.0.1",
            "fd00:ec2::253",
            "8.8.8.8",
        ] {
            assert!(!is_metadata(ip.parse().unwrap()), "{ip}");
        }
    }

    #[tokio::test]
    async fn the_resolver_refuses_names_of_private_addresses() {
        let err = PublicOnly
            .resolve("localhost".parse().unwrap())
            .await
            .err()
            .expect("localhost is refused");
        let private = err
            .downcast_ref::<PrivateAddress>()
            .expect("a PrivateAddress");
        assert_eq!(private.host, "localhost");
        assert!(private.ip.is_loopback());
    }
}
