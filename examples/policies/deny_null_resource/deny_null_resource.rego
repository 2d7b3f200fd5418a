# Atlantis's conftest example, rewritten for cascade: the plan is `input.plan`, the
# message names the unit, and `terraform_data` (null_resource's built-in successor
# since Terraform 1.4) is refused as well.
package main

import rego.v1

denied_types := {"null_resource", "terraform_data"}

deny contains msg if {
	some rc in input.plan.resource_changes
	rc.type in denied_types
	"create" in rc.change.actions
	msg := sprintf("%s: %s cannot be created (no %s)", [input.unit.path, rc.address, rc.type])
}
