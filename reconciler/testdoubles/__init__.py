"""Test doubles for outside systems that cannot exist here (a cloud API, a license server).

They speak the real provider protocol over the real ``exec`` transport, so everything
between the planner and the provider boundary is exercised for real.
"""
