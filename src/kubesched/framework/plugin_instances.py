"""The plugins of one profile, built: every plugin the profile places instantiated once with its args
(upstream ``frameworkruntime.NewFramework``'s plugin construction), and the instances at each
extension point."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kubesched.errors import InputError
from kubesched.framework.extension_points import ExtensionPoint

if TYPE_CHECKING:
    from kubesched.framework.config import ProfileConfig
    from kubesched.framework.handle import Handle
    from kubesched.framework.registry import Registry


def build_plugins(
    profile: ProfileConfig, registry: Registry, handle: Handle
) -> tuple[dict[str, object], dict[ExtensionPoint, list[object]]]:
    """Every plugin the profile places, built once with its args, and the instances at each extension
    point in profile order."""
    instances: dict[str, object] = {}

    def get(name: str) -> object:
        if name not in instances:
            spec = registry[name]
            try:
                instances[name] = spec.factory(profile.plugin_args.get(name), handle)
            except InputError:
                raise
            except (ValueError, TypeError) as exc:
                raise InputError(
                    f"cannot build plugin {name}: {exc}", field=f"profiles[{profile.scheduler_name}]"
                ) from exc
        return instances[name]

    placed = {p: [get(ref.name) for ref in profile.plugins.get(p, [])] for p in ExtensionPoint}
    return instances, placed
