module github.com/llmcloud/llmcloud

go 1.26
