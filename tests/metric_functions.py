"""Module-level metric functions (picklable: worker processes can be sent them)."""


def response_length(instance):
    return {"response_length": float(len(instance["response"]))}
