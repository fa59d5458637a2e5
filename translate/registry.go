package translate

// Registry returns every step the relay knows, oldest change first. Each
// step lives in its own file with its description, its lossy/lossless claim
// and a sibling test; chains are built from this list (never an N×N table).
func Registry() []*Step {
	return []*Step{
		activityDrop,         // 0.0.41
		userParts,            // 0.0.41
		reasoningToThinking,  // 0.0.45
		thinkingToReasoning,  // 0.0.45 (upgrade)
		reasoningRoleUpgrade, // 0.0.45 (upgrade)
		textName,             // 0.0.48
		mediaToBinary,        // 0.0.49
		emptyDelta,           // 0.0.50
		interruptOutcome,     // 0.0.54
		nullParentMessageID,  // 0.0.58
		subagents,            // 0.0.59
		runAfterError,        // 0.0.59 (late)
		binaryToMedia,        // 1.0 (upgrade)
		nullMeansAbsent,      // 1.0 (upgrade)
		absentMeansNull,      // 1.0 (upgrade)
		toolPartsToText,      // 1.0
		fileSourceParts,      // 1.0
		outcomeMembers,       // 1.0
		cancelledOutcome,     // 1.0: after outcomeMembers, so it runs before it
		inputToolsContext,    // 1.0
		unrecognisedMaterial, // 1.0 (late: after every other downgrade)

		// The input direction (RunAgentInput toward the producer), by core
		// version; see input.go.
		inputActivity,             // every producer (upgrade)
		inputParentRunID,          // 0.0.40
		inputFlattenContent,       // 0.0.40
		inputReasoning,            // 0.0.45
		inputEncryptedValue,       // 0.0.45
		inputMediaToBinary,        // 0.0.49
		inputResume,               // 0.0.54
		inputSubagentRunID,        // 0.0.59
		inputBinaryToMedia,        // 1.0 (upgrade)
		inputNulls,                // 1.0 (upgrade)
		inputToolsContextRequired, // 1.0
		inputFileSource,           // 1.0
		inputToolParts,            // 1.0
		inputUnrecognised,         // 1.0 (late: after every other downgrade)
		inputPython,               // Python producers (late: after inputUnrecognised)
	}
}
