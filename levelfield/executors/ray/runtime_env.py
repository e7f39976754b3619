"""Where the workers run and what they get: the connection to Ray (with the runtime_env as the
job's), and the runtime_env checked, its local folders uploaded, and probed on the cluster.

``ray`` is imported only here and in the modules beside it, when a Ray run starts:
``pip install 'levelfield[ray]'``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..._core.errors import ConfigError, MissingExtraError

__all__ = ["actor_env"]  # and, for the modules beside it, _ray and _describe

_LOOPBACK = "127.0.0.2"  # levelfield.testing.ray_cluster.LOOPBACK: see _on_loopback


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise MissingExtraError("ray", "ray", "executor='ray'") from None
    return ray


def _connect(ray: Any, address: str | None, runtime_env: Mapping[str, Any] | None) -> None:
    """Connect to the cluster, with the runtime_env as the job's, unless this process already is."""
    if ray.is_initialized():
        return
    env = _checked_env(runtime_env)
    try:
        ray.init(address=address, runtime_env=env or None, ignore_reinit_error=True, **_on_loopback(address))
    except (ValueError, TypeError, FileNotFoundError, NotADirectoryError, RuntimeError) as exc:
        if env and ray.is_initialized():  # connected, then the runtime_env (its upload) failed
            ray.shutdown()
        if env and _about_env(exc):
            raise ConfigError(f"RayExecutor(runtime_env={runtime_env!r}): Ray refused it ({_describe(exc)}). "
                              "Give working_dir / py_modules as existing local folders (small: Ray uploads them) "
                              "or as URIs, pip as a list of requirements") from None
        raise
    if env:
        try:
            _probe_env(ray, None, runtime_env)  # the job's env, set up on the cluster (a pip install)
        except ConfigError:
            ray.shutdown()  # a later call starts again, rather than keep a job whose env cannot start
            raise
        _UPLOADED[_env_key(ray, env)] = None  # the job carries it: actors need nothing of their own


def actor_env(ray: Any, address: str | None, runtime_env: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The runtime_env the worker actors are started with: None when the job's applies.

    When this process was connected before (the user's ``ray.init(runtime_env=...)``, which
    stays as it is), local ``working_dir`` / ``py_modules`` folders are uploaded here and the
    actors get their URIs: Ray takes local folders only at the job level.
    """
    _connect(ray, address, runtime_env)
    env = _checked_env(runtime_env)
    if not env:
        return None
    key = _env_key(ray, env)
    if key not in _UPLOADED:
        _UPLOADED[key] = _upload(env, runtime_env)
    return _UPLOADED[key]


def _on_loopback(address: str | None) -> dict[str, Any]:
    """Options of ``ray.init`` that keep a Ray this process starts on its own on loopback; ``{}`` when
    ``ray.init`` joins a cluster (an address given, ``RAY_ADDRESS``, one ``ray start`` left here).

    On Linux Ray names a local node by the machine's LAN address, and swaps ``127.0.0.1`` given as
    ``_node_ip_address`` for it too (``resolve_ip_for_localhost``); another loopback address it keeps,
    so the GCS, the raylet and the workers are reached at 127.0.0.2. On macOS and Windows Ray uses
    127.0.0.1 already (where 127.0.0.2 need not exist).
    """
    if address is not None or not sys.platform.startswith("linux"):
        return {}
    try:
        from ray._private.services import canonicalize_bootstrap_address

        joins = canonicalize_bootstrap_address(None) is not None  # type: ignore[arg-type]  # None: Ray's own default  # what ray.init(address=None) connects to
    except Exception:  # noqa: BLE001 - another Ray: leave the choice to it
        return {}
    return {} if joins else {"_node_ip_address": _LOOPBACK}


# The actors' runtime_env for each (cluster, runtime_env) this process has prepared: None when the
# job carries it (levelfield connected with it), else the env with local folders uploaded as URIs.
_UPLOADED: dict[tuple[str, str], dict[str, Any] | None] = {}
_PROBE_SECONDS = 900.0  # a pip install on the cluster may take minutes; a setup that never ends must not


def _checked_env(env: Mapping[str, Any] | None) -> dict[str, Any]:
    """The runtime_env as a dict, or a ConfigError naming the field that Ray would refuse later."""
    if env is None:
        return {}
    if not isinstance(env, Mapping):
        raise ConfigError(f"RayExecutor(runtime_env={env!r}): expected a dict such as "
                          "{'working_dir': '.', 'pip': ['requests']}")
    from ray.runtime_env import RuntimeEnv

    unknown = sorted(str(k) for k in env if k not in RuntimeEnv.known_fields)
    if unknown:
        known = ", ".join(sorted(k for k in RuntimeEnv.known_fields if not k.startswith("_")))
        raise ConfigError(f"RayExecutor(runtime_env=...): unknown field(s) {', '.join(map(repr, unknown))}; "
                          f"Ray knows {known}")
    checked = dict(env)
    for field_name in ("working_dir", "py_modules"):
        value = checked.get(field_name)
        paths = value if isinstance(value, (list, tuple)) else [value]
        for path in paths:
            if isinstance(path, (str, Path)) and "://" not in str(path) and not Path(path).exists():
                raise ConfigError(f"RayExecutor(runtime_env={{{field_name!r}: ...}}): {str(path)!r} does not exist "
                                  f"(from {Path.cwd()}); give an existing folder (or .zip) or a URI")
        if isinstance(value, Path):
            checked[field_name] = str(value)
        elif isinstance(value, (list, tuple)):
            checked[field_name] = [str(p) if isinstance(p, Path) else p for p in value]
    try:
        RuntimeEnv(**checked)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"RayExecutor(runtime_env={dict(env)!r}): {_describe(exc)}") from None
    return checked


def _env_key(ray: Any, env: Mapping[str, Any]) -> tuple[str, str]:
    try:
        where = str(ray.get_runtime_context().gcs_address)
    except Exception:  # noqa: BLE001 - a Ray client connection has no GCS address here
        where = "client"
    return where, json.dumps(env, sort_keys=True, default=str)


def _about_env(exc: BaseException) -> bool:
    """Whether an error of ``ray.init`` is about its runtime_env (a folder, a package, its size)."""
    text = str(exc).lower()
    return any(word in text for word in ("runtime_env", "working_dir", "py_modules", "package", "uri", "path"))


def _upload(env: dict[str, Any], given: Any) -> dict[str, Any]:
    """The runtime_env with its local working_dir / py_modules uploaded to the cluster (as ``gcs://`` URIs).

    What ``ray.init(runtime_env=...)`` does for a job, done for the actors of a process that was
    already connected; then a Ray task starts with it, so a package that does not install is a
    ConfigError now rather than workers that never start.
    """
    ray = _ray()
    try:
        from ray.util.client import ray as client

        remote = client.is_connected()
    except ImportError:  # pragma: no cover
        remote = False
    shipped = dict(env)
    if not remote and ("working_dir" in env or "py_modules" in env):  # a Ray client uploads them itself
        try:
            from ray._private.runtime_env.py_modules import upload_py_modules_if_needed
            from ray._private.runtime_env.working_dir import upload_working_dir_if_needed
            from ray._private.worker import global_worker
        except ImportError:  # pragma: no cover - Ray moved its helpers
            raise ConfigError(
                f"RayExecutor(runtime_env={given!r}): this process was connected to Ray before (ray.init) and this "
                "Ray cannot upload local folders for its actors; pass the runtime_env to ray.init(...) instead"
            ) from None
        scratch = global_worker.node.get_runtime_env_dir_path()
        try:
            shipped = upload_py_modules_if_needed(shipped, include_gitignore=True, scratch_dir=scratch)
            shipped = upload_working_dir_if_needed(shipped, include_gitignore=True, scratch_dir=scratch)
        except (ValueError, TypeError, OSError, RuntimeError) as exc:
            raise ConfigError(f"RayExecutor(runtime_env={given!r}): could not upload it to the cluster "
                              f"({_describe(exc)}); keep the folders small (Ray's limit is a few hundred MiB)") from None
        shipped.pop("excludes", None)
    _probe_env(ray, shipped, given)
    return shipped


def _probe_env(ray: Any, env: dict[str, Any] | None, given: Any) -> None:
    """Start one small Ray task with the runtime_env: a ConfigError if Ray cannot set it up."""
    probe = ray.remote(_probe).options(num_cpus=0, max_retries=0, **({"runtime_env": env} if env else {}))
    try:
        ray.get(probe.remote(), timeout=_PROBE_SECONDS)
    except ray.exceptions.RuntimeEnvSetupError as exc:
        raise ConfigError(f"RayExecutor(runtime_env={given!r}): Ray could not set it up on the cluster "
                          f"({_describe(exc)})") from None
    except ray.exceptions.GetTimeoutError:
        raise ConfigError(f"RayExecutor(runtime_env={given!r}): not set up on the cluster after "
                          f"{_PROBE_SECONDS:.0f} s") from None


def _probe() -> None:
    """A Ray task that does nothing: it starts only where the runtime_env could be set up."""


def _describe(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__
