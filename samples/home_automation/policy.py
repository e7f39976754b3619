"""The deterministic rules the sample agents follow, whatever framework runs them.

``decide(prompt, outputs)`` looks at the user's prompt and the tool outputs of the steps taken
so far and returns the next step: a list of tool calls (several = parallel calls) or the final
answer. The ``"careful"`` style does what the dataset's references expect; the ``"hasty"`` style
skips look-ups, guesses, reorders and drops calls, so two agents over the same tools differ.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

Call = tuple[str, dict[str, Any]]
Decision = list[Call] | str

_ROOMS = ("Living Room", "Bedroom", "Kitchen", "Garage")


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except (TypeError, json.JSONDecodeError):
        return None


def _room(prompt: str) -> str | None:
    for room in _ROOMS:
        if room.lower() in prompt.lower():
            return room
    return None


def _user(prompt: str) -> str:
    m = re.search(r"user_\w", prompt)
    return m.group(0) if m else "user_y"


def _devices(prompt: str) -> list[str]:
    return re.findall(r"device_\d+", prompt)


def _failed(outputs: list[list[str]]) -> str | None:
    for step in outputs:
        for out in step:
            if out.startswith("Error"):
                return out
    return None


# Each rule: (pattern, handler(match, prompt, outputs, hasty) -> Decision). First match wins.
Rule = tuple[str, Callable[[re.Match, str, list[list[str]], bool], Decision]]


def _preferred_temperature(m: re.Match, prompt: str, outputs: list[list[str]], hasty: bool) -> Decision:
    room = _room(prompt) or "Living Room"
    user = _user(prompt)
    if hasty:
        if not outputs:
            return [("set_temperature", {"location": room, "temperature": 22})]
        return f"Set the {room} to 22 degrees."
    if not outputs:
        return [("get_user_preferences", {"user_id": user})]
    if len(outputs) == 1:
        prefs = _json(outputs[0][0]) or {}
        return [("set_temperature", {"location": room, "temperature": prefs.get("preferred_temperature", 22)})]
    temp = (_json(outputs[0][0]) or {}).get("preferred_temperature")
    return f"The {room} temperature is now set to your preferred {temp} degrees."


def _switch(m: re.Match, prompt: str, outputs: list[list[str]], hasty: bool) -> Decision:
    status = m.group(1).upper()
    devices = _devices(prompt)
    if hasty and len(devices) > 1:
        devices = devices[:1]
    if not outputs:
        return [("set_device_info", {"device_id": d, "updates": {"status": status}}) for d in devices]
    where = f" in the {_room(prompt)}" if _room(prompt) else ""
    names = " and ".join(devices)
    return f"{names}{where} {'is' if len(devices) == 1 else 'are'} now {status.lower()}."


def _room_off(m: re.Match, prompt: str, outputs: list[list[str]], hasty: bool) -> Decision:
    room = _room(prompt)
    if hasty:
        if not outputs:
            return [
                ("set_device_info", {"device_id": "device_4", "updates": {"status": "OFF"}}),
                ("set_device_info", {"device_id": "device_3", "updates": {"status": "OFF"}}),
            ]
        return f"Everything in the {room} is off."
    if not outputs:
        return [("list_devices", {"room": room})]
    if len(outputs) == 1:
        ids = _json(outputs[0][0]) or []
        return [("set_device_info", {"device_id": d, "updates": {"status": "OFF"}}) for d in ids]
    return f"All devices in the {room} are now off: {', '.join(_json(outputs[0][0]) or [])}."


def _status(m: re.Match, prompt: str, outputs: list[list[str]], hasty: bool) -> Decision:
    device = _devices(prompt)[0]
    if not outputs:
        return [("get_device_info", {"device_id": device})]
    info = _json(outputs[0][0]) or {}
    return f"{device} ({info.get('name')}) is {info.get('status')}."


def _check_then_off(m: re.Match, prompt: str, outputs: list[list[str]], hasty: bool) -> Decision:
    device = _devices(prompt)[0]
    if hasty:
        if not outputs:
            return [("set_device_info", {"device_id": device, "updates": {"status": "OFF"}})]
        return f"Turned {device} off."
    if not outputs:
        return [("get_device_info", {"device_id": device})]
    if len(outputs) == 1:
        info = _json(outputs[0][0]) or {}
        if info.get("status") == "ON":
            return [("set_device_info", {"device_id": device, "updates": {"status": "OFF"}})]
        return f"{device} was already off."
    return f"{device} was on, so I turned it off."


def _brightness(m: re.Match, prompt: str, outputs: list[list[str]], hasty: bool) -> Decision:
    device = _devices(prompt)[0]
    level = m.group(1) if hasty else int(m.group(1))
    if not outputs:
        return [("set_device_info", {"device_id": device, "updates": {"brightness": level}})]
    return f"{device} brightness is now {level}."


def _compare_rooms(m: re.Match, prompt: str, outputs: list[list[str]], hasty: bool) -> Decision:
    rooms = [r for r in _ROOMS if r.lower() in prompt.lower()]
    if hasty:
        rooms = list(reversed(rooms))
    if not outputs:
        return [("get_temperature", {"location": r}) for r in rooms]
    temps = {d["location"]: d["temperature"] for d in (_json(o) for o in outputs[0]) if d}
    warmer = max(temps, key=temps.get)
    return f"The {warmer} is warmer at {temps[warmer]} degrees."


def _temperature(m: re.Match, prompt: str, outputs: list[list[str]], hasty: bool) -> Decision:
    room = _room(prompt) or "Living Room"
    if not outputs:
        return [("get_temperature", {"location": room})]
    error = _failed(outputs)
    if error:
        return f"I could not read the temperature in the {room}: {error}"
    return f"It is {(_json(outputs[0][0]) or {}).get('temperature')} degrees in the {room}."


def _set_temperature(m: re.Match, prompt: str, outputs: list[list[str]], hasty: bool) -> Decision:
    room = _room(prompt) or "Living Room"
    temp = int(m.group(1))
    if not outputs:
        return [("set_temperature", {"location": room, "temperature": temp})]
    return f"The {room} temperature is now set to {temp} degrees."


def _schedule_on(m: re.Match, prompt: str, outputs: list[list[str]], hasty: bool) -> Decision:
    device, action, time = _devices(prompt)[0], m.group(1).upper(), m.group(2)
    if not outputs:
        return [("set_schedule", {"device_id": device, "time": time, "action": action})]
    return f"{device} will turn {action.lower()} at {time}."


def _wake_lights(m: re.Match, prompt: str, outputs: list[list[str]], hasty: bool) -> Decision:
    user = _user(prompt)
    if hasty:
        if not outputs:
            return [("set_schedule", {"device_id": "device_1", "time": "07:00", "action": "ON"})]
        return "The Living Room light will turn on at 07:00."
    if not outputs:
        return [("get_user_preferences", {"user_id": user})]
    wake = (_json(outputs[0][0]) or {}).get("wake_time", "07:00")
    if len(outputs) == 1:
        return [("set_schedule", {"device_id": "device_1", "time": wake, "action": "ON"})]
    return f"The Living Room light will turn on at {wake}, your wake time."


def _get_schedule(m: re.Match, prompt: str, outputs: list[list[str]], hasty: bool) -> Decision:
    device = _devices(prompt)[0]
    if not outputs:
        return [("get_schedule", {"device_id": device})]
    items = (_json(outputs[0][0]) or {}).get("schedule", [])
    if not items:
        return f"{device} has nothing scheduled."
    return f"{device} is scheduled to turn " + "; ".join(f"{i['action'].lower()} at {i['time']}" for i in items) + "."


RULES: list[Rule] = [
    (r"preferred (?:level|temperature)", _preferred_temperature),
    (r"wake time", _wake_lights),
    (r"check device_\d+ and turn it off", _check_then_off),
    (r"turn off (?:all|every)", _room_off),
    (r"schedule device_\d+ to turn (on|off) at (\d\d:\d\d)", _schedule_on),
    (r"scheduled for", _get_schedule),
    (r"brightness to (\d+)", _brightness),
    (r"turn (on|off) device_\d+", _switch),
    (r"status of device_\d+", _status),
    (r"warmer", _compare_rooms),
    (r"set the \w+(?: \w+)? temperature to (\d+)", _set_temperature),
    (r"temperature in", _temperature),
]

GREETING = "I can check and control your devices, temperatures and schedules."


def decide(prompt: str, outputs: list[list[str]], style: str = "careful") -> Decision:
    """The next step for ``prompt`` after the steps whose tool outputs are ``outputs``."""
    hasty = style == "hasty"
    for pattern, handler in RULES:
        m = re.search(pattern, prompt, flags=re.IGNORECASE)
        if m:
            return handler(m, prompt, outputs, hasty)
    return GREETING
