import pytest

from pipeline.clean.pii import mask_pii


@pytest.mark.parametrize("text, expected, n_emails", [
    ("Contact john.doe@example.com.", "Contact <EMAIL>.", 1),
    ("Mail first.last+tag@mail.example.co.uk or ops@corp.io", "Mail <EMAIL> or <EMAIL>", 2),
    ("<a href='mailto:jane_o-neil@uni-x.edu'>", "<a href='mailto:<EMAIL>'>", 1),
    ("(JOHN@EXAMPLE.ORG)", "(<EMAIL>)", 1),
])
def test_emails(text, expected, n_emails):
    assert mask_pii(text) == (expected, n_emails, 0)


@pytest.mark.parametrize("text, expected, n_ips", [
    ("Server at 192.168.0.1.", "Server at <IP>.", 1),
    ("curl 10.0.0.255:8080/x and 8.8.8.8", "curl <IP>:8080/x and <IP>", 2),
    ("from 255.255.255.255 to 0.0.0.0", "from <IP> to <IP>", 2),
    ("host 2001:db8::8a2e:370:7334 up", "host <IP> up", 1),
    ("2001:0db8:85a3:0000:0000:8a2e:0370:7334", "<IP>", 1),
    ("[fe80::1ff:fe23:4567:890a]", "[<IP>]", 1),
])
def test_ips(text, expected, n_ips):
    assert mask_pii(text) == (expected, 0, n_ips)


@pytest.mark.parametrize("text", [
    "logo@2x.png and icon@3x.jpg",           # retina asset names
    "follow @username and user@localhost",   # handles, no top-level domain
    "It costs $1,299.99 or 3.14159 per unit.",
    "Released as v1.2.3.4 yesterday",        # version with a letter prefix
    "Upgrade to version 1.2.3.4 today",      # version named as such
    "build 10.0.19041.1 is out",
    "semver 1.2.3 and 1.2.3.4.5",            # three parts; five parts
    "Dates 12.05.2023 and 2023.01.27",
    "Invalid 999.1.1.1 and 256.0.0.1",       # octets out of range
    "Leading zeros 192.168.001.001",
    "Meeting at 12:30:45 today",             # a time
    "std::vector<int> and a::b::c",          # C++ scopes
    "MAC 00:1a:2b:3c:4d:5e",                 # MAC address
    "loopback ::1 and fe80::",               # fewer than three groups
    "Ratio 1:2:3 and 10.5% growth",
])
def test_false_positives_left_alone(text):
    assert mask_pii(text) == (text, 0, 0)


def test_counts_mixed():
    text = "a@b.com wrote from 1.2.3.4 and c@d.org from 2001:db8::1:2"
    out, ne, ni = mask_pii(text)
    assert (ne, ni) == (2, 2)
    assert out == "<EMAIL> wrote from <IP> and <EMAIL> from <IP>"


def test_overlong_local_part_is_not_an_email():
    text = "x" * 80 + "@example.com"
    assert mask_pii(text)[1] == 0
