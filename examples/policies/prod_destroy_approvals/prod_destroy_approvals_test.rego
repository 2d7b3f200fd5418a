package main

import rego.v1

unit(environment, destroy, replace, pull_request) := {
	"unit": {"path": sprintf("live/%s/db", [environment]), "environment": environment},
	"change": {"add": 0, "change": 0, "destroy": destroy, "replace": replace},
	"pull_request": pull_request,
}

pr(approvals) := {"number": 7, "author": "alice", "head_sha": "c0ffee", "approvals": approvals}

test_a_prod_destroy_without_approvals_is_denied if {
	msg := "live/prod/db destroys or replaces 1 resources in prod: that needs 2 approvals of the commit planned, it has 0"
	msg in deny with input as unit("prod", 1, 0, pr([]))
	msg in deny with input as unit("prod", 1, 0, null)
}

test_approvals_of_an_older_push_do_not_count if {
	msg := "live/prod/db destroys or replaces 2 resources in prod: that needs 2 approvals of the commit planned, it has 1"
	msg in deny with input as unit("prod", 0, 2, pr([
		{"user": "bob", "commit": "c0ffee"},
		{"user": "carol", "commit": "0ld5ha"},
	]))
}

test_two_approvals_of_the_commit_planned_allow_it if {
	count(deny) == 0 with input as unit("prod", 1, 1, pr([
		{"user": "bob", "commit": "c0ffee"},
		{"user": "carol", "commit": "c0ffee"},
	]))
}

test_outside_prod_a_destroy_is_a_warning if {
	count(deny) == 0 with input as unit("dev", 3, 0, null)
	"live/dev/db destroys or replaces 3 resources" in warn with input as unit("dev", 3, 0, null)
	count(warn) == 0 with input as unit("dev", 0, 0, null)
}
