package backend

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/opensearch-project/opensearch-go/v4/signer"
	"github.com/opensearch-project/opensearch-go/v4/signer/awsv2"
)

// AWS SigV4 signing of OpenSearch requests, for Amazon OpenSearch Service
// ("es") and OpenSearch Serverless ("aoss"), through opensearch-go's own
// signer (signer/awsv2, AWS SDK for Go v2). The credentials come from the
// SDK's default chain, resolved lazily on the first request: the
// AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN variables,
// the shared config and credentials files (AWS_PROFILE), web identity (EKS
// service accounts), then the ECS or EC2 instance role. None of them is
// ever logged. The AWS SDK is a dependency for this edge only.

// awsServices are the SigV4 service names OpenSearch endpoints sign with.
var awsServices = []string{"es", "aoss"}

// awsSigner returns the signer of c, or nil when c.AWSRegion is empty.
func (c *OpenSearchConfig) awsSigner() (signer.Signer, error) {
	if c.AWSRegion == "" {
		return nil, nil
	}
	awsCfg, err := config.LoadDefaultConfig(context.Background(), config.WithRegion(c.AWSRegion))
	if err != nil {
		return nil, fmt.Errorf("backend: opensearch-aws-region %s: load the AWS configuration: %w", c.AWSRegion, err)
	}
	s, err := awsv2.NewSignerWithService(awsCfg, c.AWSService)
	if err != nil {
		return nil, fmt.Errorf("backend: opensearch-aws-service %s: %w", c.AWSService, err)
	}
	return s, nil
}
