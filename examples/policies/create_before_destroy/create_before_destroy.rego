# Spacelift's "always create before deleting", rewritten for cascade with the unit's
# place in the graph: Spacelift lists resource types that must be created before they
# are destroyed; here it is every resource of a unit that other units depend on, since
# they read its outputs and would see them gone between the destroy and the create.
package main

import rego.v1

destroyed_first contains rc.address if {
	some rc in input.plan.resource_changes
	rc.change.actions == ["delete", "create"]
}

created_first contains rc.address if {
	some rc in input.plan.resource_changes
	rc.change.actions == ["create", "delete"]
}

deny contains msg if {
	count(input.unit.dependents) > 0
	some address in destroyed_first
	msg := sprintf("%s is destroyed before its replacement exists, and %s depend on %s: set lifecycle { create_before_destroy = true }", [address, concat(", ", input.unit.dependents), input.unit.path])
}

warn contains msg if {
	count(input.unit.dependents) > 0
	some address in created_first
	msg := sprintf("%s is replaced while %s depend on %s", [address, concat(", ", input.unit.dependents), input.unit.path])
}
