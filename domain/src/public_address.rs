//! Which IP addresses are on the public internet.
//!
//! A build's `RUN` steps "can reach the public internet" (spec section 3,
//! `runtime_contract.network`), and a base image comes from a public registry
//! (section 2): neither may reach this host, its private network or a cloud
//! metadata service. `Ipv4Addr::is_global` is not stable, so the special-purpose
//! blocks of the IANA registries are listed here.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Whether `ip` is a public unicast address (no loopback, private, shared,
/// link-local, documentation, benchmarking, multicast or reserved block; an IPv6
/// address carrying an IPv4 one is judged by that one).
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(ip) => is_public_v4(ip),
        IpAddr::V6(ip) => is_public_v6(ip),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(a == 0
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || (a == 100 && (64..128).contains(&b))
        || (a == 192 && b == 0 && c == 0)
        || ip.is_documentation()
        || (a == 198 && (b == 18 || b == 19))
        || a >= 224)
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let segments = ip.segments();
    if let Some(v4) = ip.to_ipv4_mapped() {
        return is_public_v4(v4);
    }
    let embedded = |high: u16, low: u16| Ipv4Addr::from((u32::from(high) << 16) | u32::from(low));
    match segments {
        // IPv4-compatible (deprecated) and the NAT64 prefix carry an IPv4 address last.
        [0, 0, 0, 0, 0, 0, high, low] if high != 0 => is_public_v4(embedded(high, low)),
        [0x64, 0xff9b, 0, 0, 0, 0, high, low] => is_public_v4(embedded(high, low)),
        // The local-use NAT64 prefix (64:ff9b:1::/48) is not public itself.
        [0x64, 0xff9b, 1, ..] => false,
        // 6to4 carries it after the prefix.
        [0x2002, high, low, ..] => is_public_v4(embedded(high, low)),
        _ => {
            !(ip.is_unspecified()
                || ip.is_loopback()
                || ip.is_multicast()
                || ip.is_unique_local()
                || ip.is_unicast_link_local()
                || segments[0] & 0xffc0 == 0xfec0
                || (segments[0] == 0x2001 && segments[1] == 0xdb8)
                || (segments[0] == 0x0100 && segments[1..4] == [0, 0, 0]))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::is_public;
    use std::net::IpAddr;

    #[test]
    fn public_addresses_are_public() {
        for ip in [
            "8.8.8.8",
            "151.101.2.132",
            "2a04:4e42::644",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
        ] {
            assert!(is_public(ip.parse::<IpAddr>().unwrap()), "{ip}");
        }
    }

    #[test]
    fn host_private_and_special_addresses_are_not() {
        for ip in [
            "0.0.0.0",
            "127.0.0.1",
            "10.0.0.5",
            "172.31.255.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.100.100.200",
            "192.0.0.170",
            "198.18.0.1",
            "203.0.113.9",
            "224.0.0.1",
            "255.255.255.255",
            "::",
            "::1",
            "::ffff:127.0.0.1",
            "::127.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "64:ff9b:1::808:808",
            "2002:7f00:1::",
            "fd00:ec2::254",
            "fe80::1",
            "fec0::1",
            "ff02::1",
            "2001:db8::1",
        ] {
            assert!(!is_public(ip.parse::<IpAddr>().unwrap()), "{ip}");
        }
    }
}
