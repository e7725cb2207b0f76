module github.com/llmcloud/llmcloud

go 1.26.0

require golang.org/x/text v0.44.0
