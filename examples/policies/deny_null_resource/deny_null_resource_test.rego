package main

import rego.v1

plan_with(type, actions) := {"resource_changes": [{
	"address": sprintf("%s.hook", [type]),
	"type": type,
	"change": {"actions": actions},
}]}

test_creating_a_null_resource_is_denied if {
	"live/prod/app: null_resource.hook cannot be created (no null_resource)" in deny with input as {
		"unit": {"path": "live/prod/app"},
		"plan": plan_with("null_resource", ["create"]),
	}
}

test_replacing_terraform_data_is_denied if {
	"live/dev/app: terraform_data.hook cannot be created (no terraform_data)" in deny with input as {
		"unit": {"path": "live/dev/app"},
		"plan": plan_with("terraform_data", ["delete", "create"]),
	}
}

test_destroying_one_or_creating_another_type_is_allowed if {
	count(deny) == 0 with input as {
		"unit": {"path": "live/prod/app"},
		"plan": plan_with("null_resource", ["delete"]),
	}
	count(deny) == 0 with input as {
		"unit": {"path": "live/prod/app"},
		"plan": plan_with("aws_s3_bucket", ["create"]),
	}
}
