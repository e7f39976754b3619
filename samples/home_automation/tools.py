"""Simulated home-automation tools. Plain functions with type hints and docstrings, so any
framework can wrap them. Deterministic: setters report what they would change, they do not
mutate shared state, so concurrent runs cannot disturb each other.

Each tool returns a string (JSON text for data), which is what every framework passes back to
the model, so the sample agents see the same tool outputs whatever runs them.
"""

from __future__ import annotations

import json
from typing import Any

DEVICES: dict[str, dict[str, Any]] = {
    "device_1": {"name": "Living Room light", "room": "Living Room", "status": "OFF"},
    "device_2": {"name": "Bedroom fan", "room": "Bedroom", "status": "ON"},
    "device_3": {"name": "Kitchen light", "room": "Kitchen", "status": "OFF"},
    "device_4": {"name": "Kitchen coffee maker", "room": "Kitchen", "status": "ON"},
    "device_5": {"name": "Bedroom lamp", "room": "Bedroom", "status": "ON", "brightness": 80},
}
TEMPERATURES: dict[str, int] = {"Living Room": 20, "Bedroom": 18, "Kitchen": 21}
USERS: dict[str, dict[str, Any]] = {
    "user_x": {"preferred_temperature": 21, "wake_time": "07:30"},
    "user_y": {"preferred_temperature": 23, "wake_time": "06:30"},
}
SCHEDULES: dict[str, list[dict[str, str]]] = {
    "device_1": [],
    "device_2": [{"time": "22:00", "action": "OFF"}],
    "device_3": [],
    "device_4": [{"time": "06:45", "action": "ON"}],
    "device_5": [],
}


class ToolError(ValueError):
    """A tool was asked about something that does not exist."""


def _device(device_id: str) -> dict[str, Any]:
    if device_id not in DEVICES:
        raise ToolError(f"unknown device {device_id!r}")
    return DEVICES[device_id]


def _room(location: str) -> str:
    if location not in TEMPERATURES:
        raise ToolError(f"unknown location {location!r}")
    return location


def get_device_info(device_id: str) -> str:
    """Get the name, room and status of a device."""
    return json.dumps({"device_id": device_id, **_device(device_id)})


def set_device_info(device_id: str, updates: dict) -> str:
    """Update a device's settings, e.g. {"status": "OFF"} or {"brightness": 40}."""
    _device(device_id)
    changes = ", ".join(f"{k}={v}" for k, v in sorted(updates.items()))
    return f"Device {device_id} updated: {changes}."


def list_devices(room: str) -> str:
    """List the ids of the devices in a room."""
    return json.dumps(sorted(d for d, info in DEVICES.items() if info["room"] == _room(room)))


def get_temperature(location: str) -> str:
    """Get the current temperature of a room, in degrees Celsius."""
    return json.dumps({"location": location, "temperature": TEMPERATURES[_room(location)]})


def set_temperature(location: str, temperature: int) -> str:
    """Set the thermostat of a room, in degrees Celsius."""
    return f"Temperature in {_room(location)} set to {temperature} degrees."


def get_user_preferences(user_id: str) -> str:
    """Get a user's preferences: preferred temperature and wake time."""
    if user_id not in USERS:
        raise ToolError(f"unknown user {user_id!r}")
    return json.dumps({"user_id": user_id, **USERS[user_id]})


def get_schedule(device_id: str) -> str:
    """Get the scheduled actions of a device."""
    _device(device_id)
    return json.dumps({"device_id": device_id, "schedule": SCHEDULES[device_id]})


def set_schedule(device_id: str, time: str, action: str) -> str:
    """Schedule a device to turn ON or OFF at a time (HH:MM)."""
    _device(device_id)
    return f"Device {device_id} scheduled to turn {action} at {time}."


TOOLS = [
    get_device_info,
    set_device_info,
    list_devices,
    get_temperature,
    set_temperature,
    get_user_preferences,
    get_schedule,
    set_schedule,
]
TOOLS_BY_NAME = {t.__name__: t for t in TOOLS}


def call_tool(name: str, args: dict[str, Any]) -> str:
    """Run a tool by name; an error becomes the text a framework would hand back to the model."""
    try:
        return TOOLS_BY_NAME[name](**args)
    except (ToolError, KeyError, TypeError) as exc:
        return f"Error: {exc}"
