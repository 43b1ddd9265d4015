"""The compiler's problem codes (XCE0xx–XCE5xx, docs/errors.md), each named once.

Scripts and CI match on a code, so it never changes meaning; naming each one here keeps
the code and docs/errors.md in step (tests/test_problem_codes.py: no code is written
anywhere else). The hints depend on what was found, so they stay where the problem is
made. The policies' codes (XCE600–XCE699) are in ``compiler/policy/codes.py``.
"""

from __future__ import annotations

# Files and YAML (XCE0xx)
NOT_YAML = "XCE001"  # syntax, not UTF-8, NUL, lone surrogate, too deep, alias trouble
DUPLICATE_KEY = "XCE002"
NO_VERSION = "XCE003"
UNKNOWN_VERSION = "XCE004"
NOT_A_DOCUMENT = "XCE005"  # empty, or its top level is not a mapping
CANNOT_READ = "XCE006"  # the site folder, or a file in it
USAGE = "XCE007"
CANNOT_WRITE = "XCE008"  # the --out folder
# The policies a compile uses (XCE01x, compiler/policy/compile.py)
POLICIES_NOT_A_FOLDER = "XCE010"  # --policies DIR
NO_POLICY_FILES = "XCE011"  # a policies folder without any of the three files
EMPTY_CATALOG = "XCE012"  # opcodes.yaml lists no opcode
# Finding the site (XCE03x, compiler/cli/site_locate.py)
NO_SITE_FOUND = "XCE030"  # no folder given, and none found where the rule looks
NOT_A_SITE = "XCE031"  # a folder given that holds no site, where files would be made beside it
NO_SITE_AT_REVISION = "XCE032"  # xce-policy review: the revision holds no site
# Every input file and --out target (XCE035–XCE037, compiler/core/file_io.py)
NOT_A_REGULAR_FILE = "XCE035"  # a FIFO, device, socket or folder given or found as an input
INPUT_TOO_LARGE = "XCE036"  # more bytes than the cap of its kind of input
OUT_NOT_A_FILE = "XCE037"  # an output would replace something other than a regular file
# YAML that is not the language's YAML 1.2 (compiler/source/yaml12.py); output that fails
NOT_PLAIN_YAML = "XCE046"  # a merge key <<, a %YAML directive but 1.2, a tag
OUTPUT_FAILED = "XCE047"  # standard output closed, full or failing (compiler/cli/std_streams.py)
PATH_UNUSABLE = "XCE048"  # a path the system refuses: too long, a loop of links
# Schema (XCE1xx)
UNKNOWN_KEY = "XCE101"
WRONG_TYPE = "XCE102"
NOT_A_SIZE = "XCE103"
NOT_A_DURATION = "XCE104"
MISSING_KEY = "XCE105"
NOT_ALLOWED = "XCE106"
COUNT_NOT_A_NUMBER = "XCE107"  # a count (seats) written as a string or a size
# Hosts (XCE2xx)
HOSTLIST_SYNTAX = "XCE201"
HOSTLIST_DESCENDING = "XCE202"
HOSTLIST_TOO_LARGE = "XCE203"
HOST_IN_TWO_GROUPS = "XCE204"
OVERRIDE_NOT_IN_GROUP = "XCE205"
TOO_FEW_HOSTS = "XCE206"
HOST_REPEATED = "XCE207"  # a warning: a host written twice in one hostlist
# References (XCE3xx)
UNKNOWN_NAME = "XCE301"
DEFINED_TWICE = "XCE302"
NOT_A_LOCATION = "XCE304"
NO_CACHE = "XCE305"
# Capacity, proxies, names, secrets (XCE4xx)
QUOTAS_OVER_CAPACITY = "XCE401"
CACHE_OVER_CAPACITY = "XCE402"
NO_ACTIVE_PROXY = "XCE403"
TWO_ACTIVE_PROXIES = "XCE404"
WRONG_PROVIDER_KIND = "XCE405"
NOT_PATH_SAFE = "XCE406"
LITERAL_SECRET = "XCE407"
COMMAND_MISMATCH = "XCE408"  # external kind without command, built-in with one
CONTROLLER_MAP_CLASH = "XCE409"
CACHE_LOCATION_MISMATCH = "XCE410"
COPY_PROVIDER_MISMATCH = "XCE411"
# Topology and volumes: what the scheduler reads (compiler/checks/topology.py, volumes.py)
UNKNOWN_TOPOLOGY_KEY = "XCE412"  # a key not in site.topology
TOPOLOGY_GIVEN_TWICE = "XCE413"  # rack: and topology.rack on one group or override
CLAIMED_TWICE = "XCE414"  # two volumes use_by the same queue, profile or project
TWO_DEFAULT_VOLUMES = "XCE415"
SINGLE_NODE_SHARED = "XCE416"  # a single-node access mode mounted by more than one host
READ_ONLY_WITH_DIRS = "XCE417"  # a reader-only access mode with user directories or quotas
# Discovery: site.discovery as a mapping (XCE420–XCE423, compiler/checks/discovery.py)
DISCOVERY_UNKNOWN_GROUP = "XCE420"  # site.discovery.group names no host group
DISCOVERY_BAD_NAME = "XCE421"  # a names pattern that is neither a hostlist nor a glob
DISCOVERY_NOT_ADMIT = "XCE422"  # group or counters, but the policy admits no host
DISCOVERY_OTHERWISE_ALONE = "XCE423"  # otherwise without names: no host is 'otherwise'
# Job-directory retention (compiler/model/retention.py)
UNFETCHED_WITHOUT_FETCH = "XCE428"  # retention.unfetched without from: output-fetch
# Nothing silently accepted (issue 21)
PATHS_OVERLAP = "XCE429"  # a volume's or a cache's folder inside (or equal to) another's
BARE_DURATION = "XCE430"  # a warning: a bare number taken as seconds where minutes are usual
# Where providers run: site.proxies (XCE431–XCE434, compiler/checks/providers.py)
PROXY_SERVE_UNKNOWN = "XCE431"  # serve names no provider
PROXY_SERVE_NO_PROXY = "XCE432"  # serve names a provider no proxy runs (the controller map)
LEASE_TTL_TOO_SHORT = "XCE433"  # lease_ttl under MIN_LEASE_TTL
INVENTORY_AGE_TOO_SHORT = "XCE434"  # inventory_max_age under two publish intervals
# Warnings (XCE5xx)
VOLUME_NOT_MOUNTED = "XCE501"
DATASET_WITHOUT_COPY = "XCE502"
GROUP_WITHOUT_HOSTS = "XCE503"
# The drift section: ignore rules, waivers, notify (XCE87x, docs/errors.md "Drift rules and email")
BAD_GLOB = "XCE870"
BAD_DATE = "XCE871"
WAIVER_EXPIRES_SOON = "XCE872"  # a warning, a week ahead
WAIVER_EXPIRED = "XCE873"  # a warning: the drift it covered is reported again
MATCHES_EVERYTHING = "XCE874"
BAD_ADDRESS = "XCE875"
LOGIN_IN_CLEAR = "XCE876"
# Internal (XCE9xx)
INTERNAL = "XCE900"  # a bug of ours: the document names the crash file
