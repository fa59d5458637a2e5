package harness

// fineTimerClosable: a closed fineTimer's sleep reports an error.
const fineTimerClosable = true
