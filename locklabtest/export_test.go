package locklabtest

// RunScenarioOn is RunScenario on a recorder, for the tests that prove it
// fails when it must.
var RunScenarioOn = runScenario
