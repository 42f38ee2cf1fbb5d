"""Where the tools developers use keep their credentials: built-in deny rules, on by
default in both layers (the hook, and Claude Code's OS sandbox under `sandbox: required`),
so that a policy protects them without naming each. Data only; one entry per store, by
name. The org file may lift one (`lift: [builtin:credential-store:npm]`) where its agents
must use that tool's credentials.

Paths are under `~` (the session's home). Reading is denied, and writing too: a written
~/.npmrc or ~/.docker/config.json names programs or hosts later commands trust.
"""

from __future__ import annotations

RULE_PREFIX = "builtin:credential-store:"

CREDENTIAL_STORES: dict[str, tuple[str, ...]] = {
    "netrc": ("~/.netrc", "~/_netrc"),
    "git-credentials": ("~/.git-credentials", "~/.config/git/credentials"),
    "gh": ("~/.config/gh/hosts.yml",),
    "hub": ("~/.config/hub",),
    "docker": ("~/.docker/config.json",),
    "kube": ("~/.kube/config",),
    "npm": ("~/.npmrc", "~/.yarnrc.yml"),
    "pypi": ("~/.pypirc", "~/.config/pip/pip.conf"),
    "cargo": ("~/.cargo/credentials", "~/.cargo/credentials.toml"),
    "gem": ("~/.gem/credentials",),
    "aws": ("~/.aws/credentials", "~/.aws/sso/cache/**", "~/.aws/cli/cache/**"),
    "gcloud": ("~/.config/gcloud/credentials.db", "~/.config/gcloud/access_tokens.db",
               "~/.config/gcloud/application_default_credentials.json",
               "~/.config/gcloud/legacy_credentials/**"),
    "azure": ("~/.azure/msal_token_cache.json", "~/.azure/msal_token_cache.bin",
              "~/.azure/accessTokens.json", "~/.azure/service_principal_entries.json"),
    "terraform": ("~/.terraform.d/credentials.tfrc.json",),
    "vault": ("~/.vault-token",),
    "ssh-keys": ("~/.ssh/id_*", "~/.ssh/*.pem", "~/.ssh/*.key"),
    "gnupg": ("~/.gnupg/private-keys-v1.d/**", "~/.gnupg/secring.gpg"),
}
"""store name -> where its credentials live."""


def store_rule_ids() -> tuple[str, ...]:
    return tuple(RULE_PREFIX + name for name in CREDENTIAL_STORES)
