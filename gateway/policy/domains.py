"""WebFetch `domain:` rules compared with the URL's parsed host."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote, urlsplit


def normalize_host(host: str) -> str:
    host = unquote(host).strip().lower().rstrip(".")
    try:
        return host.encode("idna").decode("ascii") if not host.isascii() else host
    except UnicodeError:
        return host


def url_hosts(url: str) -> tuple[str | None, ...]:
    """Hosts a fetcher might contact: WHATWG parsers read '\\' as '/', RFC 3986 ones do not."""
    hosts = (url_host(url.replace("\\", "/")), url_host(url))
    return hosts[:1] if hosts[0] == hosts[1] else hosts


def url_host(url: str) -> str | None:
    """Host of a URL: userinfo, port, case and trailing dot removed."""
    text = url.strip()
    if "://" not in text:
        text = "http://" + text.lstrip("/")
    try:
        host = urlsplit(text).hostname
    except ValueError:
        return None
    return normalize_host(host) if host else None


@dataclass(frozen=True)
class DomainPattern:
    host: str
    """Exact host, or '' for any host."""
    subdomains: bool
    """`*.example.com`: any subdomain of the host (not the host itself)."""
    source: str

    def matches(self, host: str | None) -> bool:
        if host is None:
            return not self.host
        if not self.host:
            return True
        if self.subdomains:
            return host.endswith("." + self.host)
        return host == self.host


def compile_domain_pattern(content: str) -> DomainPattern:
    if not content.startswith("domain:"):
        raise ValueError(f"WebFetch rules take domain:HOST, not {content!r}")
    host = content[len("domain:") :].strip()
    if host in ("", "*"):
        if not host:
            raise ValueError("empty domain in WebFetch rule")
        return DomainPattern("", False, content)
    if host.startswith("*."):
        return DomainPattern(normalize_host(host[2:]), True, content)
    if "*" in host or "/" in host:
        raise ValueError(f"bad domain {host!r}: use HOST or *.HOST")
    return DomainPattern(normalize_host(host), False, content)
