"""Controller opcode policies (seed N4, P3): catalog, roles, guardrails, allowlists, review."""

from compiler.policy.compile import PolicyBuild, compile_policies

__all__ = ["PolicyBuild", "compile_policies"]
