# Spacelift's "require human review when resources are changed" (a plan policy) and
# "two approvals" (an approval policy), as one rule for cascade: a unit in the `prod`
# environment may destroy or replace resources only with two approvals of the commit
# planned. Elsewhere a destroy is a warning.
package main

import rego.v1

# Approvals of an older push do not count; the author's never do (cascade leaves them out).
approvers contains approval.user if {
	some approval in input.pull_request.approvals
	approval.commit == input.pull_request.head_sha
}

removed := input.change.destroy + input.change.replace

deny contains msg if {
	input.unit.environment == "prod"
	removed > 0
	count(approvers) < 2
	msg := sprintf("%s destroys or replaces %d resources in prod: that needs 2 approvals of the commit planned, it has %d", [input.unit.path, removed, count(approvers)])
}

warn contains msg if {
	input.unit.environment != "prod"
	removed > 0
	msg := sprintf("%s destroys or replaces %d resources", [input.unit.path, removed])
}
