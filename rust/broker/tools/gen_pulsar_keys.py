#!/usr/bin/env python3
"""Regenerates ``rust/broker/src/config/pulsar_keys.txt``: every configuration key Apache Pulsar's broker knows.

Usage (from a checkout of apache/pulsar, or files downloaded from it)::

    python3 rust/broker/tools/gen_pulsar_keys.py \\
        pulsar-broker-common/src/main/java/org/apache/pulsar/broker/ServiceConfiguration.java \\
        [--legacy OLD_ServiceConfiguration.java ...] [--conf standalone-ssl.conf ...] \\
        [--keep rust/broker/src/config/pulsar_keys.txt] > new_pulsar_keys.txt

``ServiceConfiguration`` may also be given as the listing ``javap -p`` prints of the class in a
distribution's ``lib/org.apache.pulsar-pulsar-broker-common-VERSION.jar`` (its field lines have the
source's form). The last regeneration: Apache Pulsar 4.0.8's class through ``javap -p``, ``--conf``
its ``conf/broker.conf`` and ``conf/standalone.conf``, ``--keep`` the list before it.

Sources of keys, each written as its own section:

* the fields of ``ServiceConfiguration`` (Pulsar's ``PulsarConfigurationLoader`` maps a key onto the
  field of the same name; ``properties`` is the bag for everything else, not a key);
* keys the authentication providers read from that bag (listed below, from the providers' sources);
* ``--legacy``: fields of older ``ServiceConfiguration`` versions, and ``--conf``: keys set in
  configuration files that Pulsar's own projects ship (Pulsar ignores keys it no longer has, so such
  files keep working there and must keep working here); ``--keep``: every key of an earlier list
  (so a regeneration never drops a key an older file may set).

The broker accepts every key listed; the ones it does not implement are named in one warning.
"""

from __future__ import annotations

import argparse
import re
import sys

# Read from ServiceConfiguration.getProperties() by the authentication providers
# (AuthenticationProviderToken: tokenSecretKey, tokenPublicKey, tokenPublicAlg, tokenAuthClaim,
# tokenAudienceClaim, tokenAudience, tokenSettingPrefix; AuthenticationProviderBasic: basicAuthConf).
PROVIDER_PROPERTIES = [
    "tokenSecretKey",
    "tokenPublicKey",
    "tokenPublicAlg",
    "tokenAuthClaim",
    "tokenAudienceClaim",
    "tokenAudience",
    "tokenSettingPrefix",
    "basicAuthConf",
]

FIELD = re.compile(
    r"^\s+private\s+(?!static\b)(?:final\s+)?[\w.]+(?:<[^;=]*?>)?(?:\[\])?\s+(\w+)\s*(?:=|;)",
    re.MULTILINE,
)
CONF_KEY = re.compile(r"^\s*([A-Za-z][A-Za-z0-9_.-]*)\s*[=:]", re.MULTILINE)


def java_fields(path: str) -> list[str]:
    with open(path, encoding="utf-8") as f:
        text = f.read()
    return [name for name in FIELD.findall(text) if name != "properties"]


def conf_keys(path: str) -> list[str]:
    with open(path, encoding="utf-8") as f:
        return CONF_KEY.findall(f.read())


def kept_keys(path: str) -> list[str]:
    with open(path, encoding="utf-8") as f:
        return [line.strip() for line in f if line.strip() and not line.startswith("#")]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("service_configuration", help="ServiceConfiguration.java of the Pulsar version to follow")
    ap.add_argument("--legacy", action="append", default=[], help="an older ServiceConfiguration.java")
    ap.add_argument("--conf", action="append", default=[], help="a configuration file Pulsar's projects ship")
    ap.add_argument("--keep", action="append", default=[], help="an earlier pulsar_keys.txt whose keys stay")
    a = ap.parse_args()
    seen: set[str] = set()

    def section(title: str, keys: list[str]) -> None:
        fresh = [k for k in dict.fromkeys(keys) if k not in seen]
        seen.update(fresh)
        print(f"# {title}")
        print("\n".join(fresh))

    print("# Apache Pulsar broker configuration keys: regenerate with rust/broker/tools/gen_pulsar_keys.py")
    section("ServiceConfiguration fields", java_fields(a.service_configuration))
    section("read by the authentication providers from the properties bag", PROVIDER_PROPERTIES)
    legacy = [k for p in a.legacy for k in java_fields(p)] + [k for p in a.conf for k in conf_keys(p)]
    legacy += [k for p in a.keep for k in kept_keys(p)]
    section("older ServiceConfiguration fields and keys of configuration files Pulsar ships", legacy)
    return 0


if __name__ == "__main__":
    sys.exit(main())
