"""Three evaluations of one home-automation agent, as a user would run them, for the tests of ``levelfield view``.

Version 1 times out on the thermostat case; version 2 is right everywhere; version 3 switches on
the wrong light in ``lights_on`` (the case that regressed between the first and the last run).
Calls go through two sub-agents (planner, devices) and the agent records the hand-offs, so transcripts show them.
"""

import json

import levelfield as lf

METRICS = ["trajectory_exact_match", "trajectory_recall", "rouge_l_sum"]
CASES = [
    {"case_id": "lights_on", "prompt": "Turn on the kitchen light", "reference": "The kitchen light is on.",
     "reference_trajectory": [{"tool_name": "find_device", "tool_input": {"room": "kitchen"}},
                              {"tool_name": "switch", "tool_input": {"device": "kitchen_light", "on": True}}]},
    {"case_id": "thermostat", "prompt": "Set the thermostat to 21 degrees", "reference": "The thermostat is set to 21°C.",
     "reference_trajectory": [{"tool_name": "set_temperature", "tool_input": {"celsius": 21}}]},
    {"case_id": "grüße", "prompt": "Hallo! Wie geht's?", "reference": "Gut, danke!", "reference_trajectory": []},
    {"case_id": "玄関", "prompt": "玄関のドアをロックして", "reference": "ドアをロックしました。",
     "reference_trajectory": [{"tool_name": "lock", "tool_input": {"door": "front"}}]},
    {"case_id": "luz", "prompt": "Acenda a luz da sala", "reference": "A luz da sala está acesa.",
     "reference_trajectory": [{"tool_name": "switch", "tool_input": {"device": "sala", "on": True}}]},
]


def home_agent(version):
    """The agent as released in ``version`` (1, 2 or 3)."""

    def home(prompt):
        if "kitchen" in prompt:
            calls = [{"tool_name": "find_device", "tool_input": {"room": "kitchen"}, "tool_output": {"id": "kitchen_light"},
                      "agent": "planner"}]
            device = "kitchen_light" if version < 3 else "hall_light"
            calls.append({"tool_name": "switch", "tool_input": {"device": device, "on": True}, "tool_output": "ok",
                          "agent": "devices"})
            answer = "The kitchen light is on." if version < 3 else "I switched on the hall light."
            return {"response": answer, "predicted_trajectory": calls, "handoffs": ["planner", "devices"]}
        if "thermostat" in prompt:
            if version == 1:
                raise TimeoutError("thermostat service did not answer")
            return {"response": "The thermostat is set to 21°C.",
                    "predicted_trajectory": [{"tool_name": "set_temperature", "tool_input": {"celsius": 21}, "tool_output": "21"}]}
        if "ドア" in prompt:
            return {"response": "ドアをロックしました。",
                    "predicted_trajectory": [{"tool_name": "lock", "tool_input": {"door": "front"}, "tool_output": "locked"}]}
        if "luz" in prompt:
            return {"response": "A luz da sala está acesa.",
                    "predicted_trajectory": [{"tool_name": "switch", "tool_input": {"device": "sala", "on": True}}]}
        return "Gut, danke!"

    return home


def three_runs(root):
    """Evaluate versions 1, 2 and 3 into ``root/v1``, ``root/v2``, ``root/v3``; returns ``root``."""
    for version in (1, 2, 3):
        lf.evaluate(CASES, home_agent(version), METRICS, out=root / f"v{version}", progress=False)
    return root


def written_at(run, when):
    """Say in the header of the run in folder ``run`` that it was written at ``when`` (ISO 8601, to the
    second as levelfield writes it): the runs list orders by it, newest first, so a test can fix the
    order that the clock would otherwise pick (runs written within one second keep their names' order)."""
    path = run / "runs.jsonl"
    header, rest = path.read_text(encoding="utf-8").split("\n", 1)
    path.write_text(json.dumps({**json.loads(header), "created_at": when}, ensure_ascii=False) + "\n" + rest,
                    encoding="utf-8")
