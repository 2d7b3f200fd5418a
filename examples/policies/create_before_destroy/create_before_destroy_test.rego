package main

import rego.v1

replacing(actions, dependents) := {
	"unit": {"path": "live/prod/vpc", "dependents": dependents},
	"plan": {"resource_changes": [
		{"address": "aws_subnet.a", "type": "aws_subnet", "change": {"actions": actions}},
		{"address": "aws_vpc.main", "type": "aws_vpc", "change": {"actions": ["no-op"]}},
	]},
}

test_destroying_first_under_dependents_is_denied if {
	"aws_subnet.a is destroyed before its replacement exists, and live/prod/app, live/prod/db depend on live/prod/vpc: set lifecycle { create_before_destroy = true }" in deny with input as replacing(["delete", "create"], ["live/prod/app", "live/prod/db"])
}

test_creating_first_under_dependents_is_a_warning if {
	inp := replacing(["create", "delete"], ["live/prod/app"])
	count(deny) == 0 with input as inp
	"aws_subnet.a is replaced while live/prod/app depend on live/prod/vpc" in warn with input as inp
}

test_a_unit_without_dependents_may_replace_as_it_likes if {
	count(deny) == 0 with input as replacing(["delete", "create"], [])
	count(warn) == 0 with input as replacing(["delete", "create"], [])
}
